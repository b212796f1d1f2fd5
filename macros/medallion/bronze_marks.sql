{#- The incremental contract between bronze and its readers (silver per game, quarantine).

    A reader's mark is the bronze Delta version it has read up to, and when the slice it read
    was built. It rides in the commit that adds the reader's rows, as that commit's
    userMetadata (the pre-hook gamelake_bronze_mark_in_commit sets the session conf
    spark.databricks.delta.commitInfo.userMetadata before the insert, the post-hook and
    on-run-end reset it): rows and mark commit together or not at all, in one commit. A mark in
    the table properties gamelake.bronze_version and gamelake.bronze_marked_at counts too (a
    table built before, or a bronze rewrite's move, ingest/ops/migrations/reader_marks.py);
    marks only move forward, so the later one is the reader's. A mark is stale when older
    than gamelake_change_feed_hours: the Delta log or the files of the versions after it may
    be gone by then, and the reader re-reads a pinned bronze snapshot instead.

    `ingest refresh` reads every reader's mark from the Delta logs once per cycle
    (ingest/ops/bronze_marks.py) and hands them over in the session conf
    spark.gamelake.reader_marks; a build without it asks each table's history. -#}

{% macro gamelake_bronze_mark(relation, handed=none) %}
    {%- set handed = _handed_reader_marks() if handed is none else handed -%}
    {%- set name = relation.schema ~ '.' ~ relation.identifier -%}
    {%- if name in handed -%}
        {{ return(_fresh_mark(handed[name][0], handed[name][1])) }}
    {%- endif -%}
    {%- set found = [] -%}
    {%- for row in run_query("describe history " ~ relation ~ " limit 20") -%}
        {%- if not found and row['userMetadata'] and row['operation'] in _row_commits() -%}
            {%- set metadata = fromjson(row['userMetadata'], {}) -%}
            {%- if metadata is mapping and metadata.get('gamelake.reader') == name -%}
                {%- do found.append((metadata['gamelake.bronze_version'] | int, metadata['gamelake.bronze_marked_at'])) -%}
            {%- endif -%}
        {%- endif -%}
    {%- endfor -%}
    {%- set properties = {} -%}
    {%- for row in run_query("show tblproperties " ~ relation) -%}
        {%- do properties.update({row[0]: row[1]}) -%}
    {%- endfor -%}
    {%- if 'gamelake.bronze_version' in properties -%}
        {%- do found.append((properties['gamelake.bronze_version'] | int, properties['gamelake.bronze_marked_at'])) -%}
    {%- endif -%}
    {%- if not found -%}
        {{ return(none) }}
    {%- endif -%}
    {%- set latest = found | sort | last -%}
    {{ return(_fresh_mark(latest[0], latest[1])) }}
{% endmacro %}

{#- Delta's names for the commits a model's rows arrive in: a schema change the build makes
    before its insert runs under the same conf, and must not count as a mark. -#}
{% macro _row_commits() %}
    {{ return(['WRITE', 'CREATE TABLE AS SELECT', 'REPLACE TABLE AS SELECT', 'CREATE OR REPLACE TABLE AS SELECT']) }}
{% endmacro %}

{% macro _fresh_mark(version, marked_at) %}
    {%- set marked = modules.datetime.datetime.strptime(marked_at, '%Y-%m-%d %H:%M:%S') -%}
    {%- set age_hours = (modules.datetime.datetime.utcnow() - marked).total_seconds() / 3600 -%}
    {{ return({'version': version | int, 'fresh': age_hours < var('gamelake_change_feed_hours')}) }}
{% endmacro %}

{#- The readers' marks `ingest refresh` read from the Delta logs for this build:
    {'schema.table': [version, marked_at]}, empty when none were handed over. -#}
{% macro _handed_reader_marks() %}
    {{ return(_handed_conf('spark.gamelake.reader_marks')) }}
{% endmacro %}

{#- A JSON object `ingest refresh` handed over in the Spark session's conf `key`; empty without. -#}
{% macro _handed_conf(key) %}
    {%- set handed = run_query("set " ~ key)[0][1] -%}
    {{ return({} if not handed or handed == '<undefined>' else fromjson(handed)) }}
{% endmacro %}

{#- The bounds of the slice stg_bronze__new_events holds now (its bounds row), with the readers'
    marks it was planned from and whether it is fresh; none before its first build (a model
    built on its own, or sqlfluff compiling a fresh clone). -#}
{% macro gamelake_slice_bounds(slice=none) %}
    {%- set handed = _handed_slice_facts().get('bounds') if slice is none else none -%}
    {%- if handed is not none -%}
        {{ return(_slice_bounds_of(handed)) }}
    {%- endif -%}
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
    {{ return(_slice_bounds_of(rows[0])) }}
{% endmacro %}

{#- The bounds row (from, to, built at, reader marks as JSON) as gamelake_slice_bounds gives it. -#}
{% macro _slice_bounds_of(row) %}
    {%- set built_at = modules.datetime.datetime.strptime(row[2], '%Y-%m-%d %H:%M:%S') -%}
    {%- set age_hours = (modules.datetime.datetime.utcnow() - built_at).total_seconds() / 3600 -%}
    {{ return({
        'from': row[0] | int,
        'to': row[1] | int,
        'built_at': row[2],
        'reader_marks': fromjson(row[3] or '{}'),
        'fresh': age_hours < var('gamelake_change_feed_hours'),
    }) }}
{% endmacro %}

{#- What `ingest refresh` read once from the slice it built this cycle and handed to the games'
    build (ingest/ops/cycle_facts.py): {'bounds': row, 'dates': {game: {'mark', 'dates'}},
    'active': [game]}; empty for any other build, whose models ask Spark. -#}
{% macro _handed_slice_facts() %}
    {{ return(_handed_conf('spark.gamelake.slice_facts')) }}
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

{#- This reader's mark: the one the slice was planned from, read once for every reader when the
    slice was built (its own, or carried: a game with no rows in earlier slices has read up to
    them without a build, macros/medallion/bronze_slice.sql); its own when the slice planned
    none for it. Its own cannot be ahead of the planned one unless another build ran in
    between, and a mark behind only re-reads rows the anti-join keeps out. -#}
{% macro _reader_mark(bounds) %}
    {%- set planned = bounds.reader_marks.get(this.identifier) -%}
    {%- if planned is not none and bounds.fresh -%}
        {{ return({'version': planned, 'fresh': true}) }}
    {%- endif -%}
    {{ return(gamelake_bronze_mark(this)) }}
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

{#- pre-hook of bronze readers: the mark their insert carries, the slice's upper bound. A paused
    game reads nothing and keeps its mark, so resuming it reads what landed meanwhile; a
    reader already past a bounded slice (it read a newer pinned snapshot) keeps its own. -#}
{% macro gamelake_bronze_mark_in_commit() %}
    {%- if not execute -%}
        {{ return('') }}
    {%- endif -%}
    {%- set bounds = gamelake_slice_bounds() -%}
    {%- set game_slug = model.config.meta.get('game_slug') -%}
    {%- if bounds is none or (game_slug and not _game_is_active(game_slug)) -%}
        {{ return(gamelake_commit_metadata_reset()) }}
    {%- endif -%}
    {%- set known = _reader_mark(bounds) if is_incremental() else none -%}
    {%- if known is not none and known.fresh and known.version > bounds.to -%}
        {{ return(gamelake_commit_metadata_reset()) }}
    {%- endif -%}
    {%- set metadata = {
        'gamelake.reader': this.schema ~ '.' ~ this.identifier,
        'gamelake.bronze_version': bounds.to,
        'gamelake.bronze_marked_at': bounds.built_at,
    } -%}
    set spark.databricks.delta.commitInfo.userMetadata = {{ tojson(metadata) }}
{% endmacro %}

{#- post-hook of bronze readers and on-run-end: later commits of this session carry no mark. -#}
{% macro gamelake_commit_metadata_reset() %}
    reset spark.databricks.delta.commitInfo.userMetadata
{% endmacro %}

{#- Delta records no commit for an insert that adds no rows, and a reader's empty batch must
    still move its mark (a quarantine with nothing to hold would otherwise keep the slice's
    lower bound back): a reader's build records its empty commit; after it, the default. -#}
{% macro gamelake_record_empty_commits(record=true) %}
    {%- if record %}
    set spark.databricks.delta.skipRecordingEmptyCommits = false
    {%- else %}
    reset spark.databricks.delta.skipRecordingEmptyCommits
    {%- endif %}
{% endmacro %}

{% macro _game_is_active(game_slug) %}
    {%- set handed = _handed_slice_facts().get('active') -%}
    {%- if handed is not none -%}
        {{ return(game_slug in handed) }}
    {%- endif -%}
    {%- set active = run_query(
        "select count(*) from " ~ ref('games') ~ " where is_active and game_slug = '"
        ~ assert_game_slug(game_slug) ~ game_slug ~ "'") -%}
    {{ return(active[0][0] > 0) }}
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

{#- A Delta table's current version; none when it does not exist. `ingest refresh` hands over
    the versions it read from the Delta logs just before the build (spark.gamelake.table_versions,
    ingest/ops/bronze_watch.py), so no model asks Spark's `describe history`. A table this
    invocation builds is upstream of the caller and one commit further by then (a reader's build
    is one commit: the insert, recorded even when empty). A version read before somebody else's
    commit (upkeep) is behind, never ahead: reading up to it leaves the rest to the next build. -#}
{% macro gamelake_table_version(relation) %}
    {%- set handed = _handed_conf('spark.gamelake.table_versions') -%}
    {%- set name = relation.schema ~ '.' ~ relation.identifier -%}
    {%- if name in handed -%}
        {%- set built_here = ('model.' ~ project_name ~ '.' ~ relation.identifier) in selected_resources -%}
        {{ return(handed[name] | int + (1 if built_here else 0)) }}
    {%- endif -%}
    {%- if not gamelake_relation_exists(relation) -%}
        {{ return(none) }}
    {%- endif -%}
    {{ return(run_query("describe history " ~ relation ~ " limit 1")[0]['version'] | int) }}
{% endmacro %}
