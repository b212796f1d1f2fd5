{#- The incremental contract between bronze and its readers (silver per game, quarantine).

    A reader's mark is the bronze Delta version it has read up to, kept as two table
    properties of its own table: gamelake.bronze_version and gamelake.bronze_marked_at (when
    the slice it read was built). The post-hook gamelake_record_bronze_mark writes it after the
    reader's insert has committed, so a crash in between leaves the mark behind, never ahead:
    the next build reads those versions again and the reader's anti-join on its own keys keeps
    what it already holds out. A mark is stale when older than gamelake_change_feed_hours: the
    Delta log or the files of the versions after it may be gone by then, and the reader
    re-reads a pinned bronze snapshot instead. -#}

{% macro gamelake_bronze_mark(relation) %}
    {%- set properties = {} -%}
    {%- for row in run_query("show tblproperties " ~ relation) -%}
        {%- do properties.update({row[0]: row[1]}) -%}
    {%- endfor -%}
    {%- if 'gamelake.bronze_version' not in properties -%}
        {{ return(none) }}
    {%- endif -%}
    {%- set marked_at = modules.datetime.datetime.strptime(
        properties['gamelake.bronze_marked_at'], '%Y-%m-%d %H:%M:%S') -%}
    {%- set age_hours = (modules.datetime.datetime.utcnow() - marked_at).total_seconds() / 3600 -%}
    {{ return({
        'version': properties['gamelake.bronze_version'] | int,
        'fresh': age_hours < var('gamelake_change_feed_hours'),
    }) }}
{% endmacro %}

{#- The bounds of the slice stg_bronze__new_events holds now (its bounds row), with the readers'
    marks it was planned from and whether it is fresh; none before its first build (a model
    built on its own, or sqlfluff compiling a fresh clone). -#}
{% macro gamelake_slice_bounds(slice=none) %}
    {%- set slice = slice or ref('stg_bronze__new_events') -%}
    {%- if not gamelake_relation_exists(slice) -%}
        {{ return(none) }}
    {%- endif -%}
    {%- set rows = run_query(
        "select slice_from_version, slice_to_version, date_format(slice_built_at, 'yyyy-MM-dd HH:mm:ss'), "
        ~ "slice_reader_marks from " ~ slice ~ " where bronze_version is null") -%}
    {%- if rows | length != 1 -%}
        {{ exceptions.raise_compiler_error(
            slice ~ " has " ~ rows | length ~ " bounds rows, not one: "
            ~ "rebuild it with `dbt build --select stg_bronze__new_events+`") }}
    {%- endif -%}
    {%- set built_at = modules.datetime.datetime.strptime(rows[0][2], '%Y-%m-%d %H:%M:%S') -%}
    {%- set age_hours = (modules.datetime.datetime.utcnow() - built_at).total_seconds() / 3600 -%}
    {{ return({
        'from': rows[0][0] | int,
        'to': rows[0][1] | int,
        'built_at': rows[0][2],
        'reader_marks': fromjson(rows[0][3] or '{}'),
        'fresh': age_hours < var('gamelake_change_feed_hours'),
    }) }}
{% endmacro %}

{#- How a reader gets its new bronze rows this build: from the slice when its mark is fresh and
    the slice starts at or before the version after it; otherwise from bronze pinned at the
    slice's upper bound (first build, a game resumed or added, a stale mark). -#}
{% macro gamelake_bronze_read_plan() %}
    {%- if var('gamelake_pinned_read_plan', none) is not none -%}
        {{ return(var('gamelake_pinned_read_plan')) }}  {#- dbt unit tests: no Delta log to read -#}
    {%- endif -%}
    {%- if not execute -%}
        {{ return({'use_slice': true, 'mark': 0, 'to': 0}) }}
    {%- endif -%}
    {%- set bounds = gamelake_slice_bounds() -%}
    {%- if bounds is none -%}
        {%- set bronze = source('bronze', 'game_events') -%}
        {%- set current = gamelake_table_version(bronze) -%}
        {{ return({'use_slice': current is none, 'mark': 0, 'to': current}) }}
    {%- endif -%}
    {%- set mark = _reader_mark(bounds) if is_incremental() else none -%}
    {%- set use_slice = mark is not none and mark.fresh and mark.version + 1 >= bounds['from'] -%}
    {{ return({'use_slice': use_slice, 'mark': mark.version if use_slice else none, 'to': bounds['to']}) }}
{% endmacro %}

{#- This reader's mark: its own, or the one the slice was planned from when later (a game with no
    rows in earlier slices has read up to them without a build: macros/medallion/bronze_slice.sql). -#}
{% macro _reader_mark(bounds) %}
    {%- set own = gamelake_bronze_mark(this) -%}
    {%- set planned = bounds.reader_marks.get(this.identifier) -%}
    {%- if planned is not none and bounds.fresh and (own is none or not own.fresh or planned > own.version) -%}
        {{ return({'version': planned, 'fresh': true}) }}
    {%- endif -%}
    {{ return(own) }}
{% endmacro %}

{#- The bronze rows a reader has not read, staged: `where` narrows them (a game). -#}
{% macro gamelake_unread_bronze(plan, where='true') %}
    {#- both sources are dependencies whichever path a build takes; parsing sees only one -#}
    {%- do source('bronze', 'game_events') -%}
    {%- do ref('stg_bronze__new_events') -%}
    {%- if plan.use_slice %}
    select * except (slice_from_version, slice_to_version, slice_built_at, slice_reader_marks)
    from {{ ref('stg_bronze__new_events') }}
    where bronze_version > {{ plan.mark }} and {{ where }}
    {%- else %}
    select *
    from (
        {{ stage_bronze_events(
            source('bronze', 'game_events'),
            from_sql=source('bronze', 'game_events') ~ ' version as of ' ~ plan.to,
            extra=['cast(' ~ plan.to ~ ' as bigint) as bronze_version']) | indent(8) }}
    ) as pinned_bronze
    where {{ where }}
    {%- endif %}
{% endmacro %}

{#- post-hook of bronze readers: move the mark to the slice's upper bound. A paused game read
    nothing and keeps its mark, so resuming it reads what landed meanwhile. -#}
{% macro gamelake_record_bronze_mark() %}
    {%- if not execute -%}
        {{ return('') }}
    {%- endif -%}
    {%- set game_slug = model.config.meta.get('game_slug') -%}
    {%- if game_slug -%}
        {%- set active = run_query(
            "select count(*) from " ~ ref('games') ~ " where is_active and game_slug = '"
            ~ assert_game_slug(game_slug) ~ game_slug ~ "'") -%}
        {%- if active[0][0] == 0 -%}
            {{ return('') }}
        {%- endif -%}
    {%- endif -%}
    {%- set bounds = gamelake_slice_bounds() -%}
    {%- if bounds is none -%}
        {{ return('') }}
    {%- endif -%}
    {#- a bounded slice can end before a reader's mark (a game that read a newer pinned
        snapshot): the mark never moves back -#}
    {%- set mark = gamelake_bronze_mark(this) -%}
    {%- if mark is not none and mark.fresh and mark.version > bounds.to -%}
        {{ return('') }}
    {%- endif -%}
    alter table {{ this }} set tblproperties (
        'gamelake.bronze_version' = '{{ bounds.to }}',
        'gamelake.bronze_marked_at' = '{{ bounds.built_at }}'
    )
{% endmacro %}

{#- Whether `relation` is in the metastore. dbt's relation cache misses tables created by hooks
    (the bronze source, registered on-run-start), so a miss is asked of the metastore. -#}
{% macro gamelake_relation_exists(relation) %}
    {%- if adapter.get_relation(
            database=relation.database, schema=relation.schema, identifier=relation.identifier) is not none -%}
        {{ return(true) }}
    {%- endif -%}
    {%- if run_query("show schemas like '" ~ relation.schema ~ "'") | length == 0 -%}
        {{ return(false) }}
    {%- endif -%}
    {{ return(run_query("show tables in " ~ relation.schema ~ " like '" ~ relation.identifier ~ "'")
        | length > 0) }}
{% endmacro %}

{#- A Delta table's current version; none when it does not exist. -#}
{% macro gamelake_table_version(relation) %}
    {%- if not gamelake_relation_exists(relation) -%}
        {{ return(none) }}
    {%- endif -%}
    {{ return(run_query("describe history " ~ relation ~ " limit 1")[0]['version'] | int) }}
{% endmacro %}
