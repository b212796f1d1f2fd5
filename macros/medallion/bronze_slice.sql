{#- stg_bronze__new_events: the bronze rows that landed since the oldest fresh mark of the
    readers that take part (quarantine, and the silver table of every active game), read once
    from bronze's change data feed (table_changes, by Delta version: what is new is decided by
    the Delta log, not by clocks) and staged. Every silver model and quarantine read their part
    of it, so the number of games does not multiply the bronze scan. Rebuilt each build.

    One extra row, with a null bronze_version, holds the bounds (slice_from_version,
    slice_to_version, slice_built_at) and the readers' marks the slice was planned from
    (slice_reader_marks, JSON), so the bounds and the rows they describe are one commit and
    an empty range still moves the readers' marks.

    A reader's mark here is the later of its own (the one its build commits) and
    the one the previous slice carries for it: a reader that had no rows after its mark in
    the previous slice has read up to that slice's upper bound without a build of its own.
    So a game with no new events is not built at all (`ingest refresh` selects the games
    with rows), and it does not hold the slice back either. -#}
{% macro bronze_slice() %}
    {%- do ref('games') -%}  {#- which games are active: read while executing only -#}
    {%- set plan = _bronze_slice_plan() if execute else {'from': 1, 'to': 0, 'marks': {}} -%}
    {%- set bronze = source('bronze', 'game_events') -%}
    {%- if plan['from'] <= plan['to'] -%}
        {%- set changes -%}
            table_changes('{{ bronze }}', {{ plan['from'] }}, {{ plan['to'] }})
        {%- endset -%}
        {%- set version_column = '_commit_version' -%}
    {%- else -%}
        {%- set changes = bronze -%}
        {%- set version_column = 'cast(null as bigint)' -%}
    {%- endif %}
with staged as (
    {{ stage_bronze_events(bronze, from_sql=changes, extra=[version_column ~ ' as bronze_version'])
        | indent(4) }}
),

new_rows as (
    select staged.*
    from staged
    {%- if plan['from'] <= plan['to'] %}
    where staged.bronze_version is not null
    {%- else %}
    where false
    {%- endif %}
),

bounds_row as (
    select staged.*
    from (select 0 as never) as single_row
    left join staged on single_row.never = 1
),

unioned as (
    select * from new_rows
    union all
    select * from bounds_row
),

final as (
    select
        unioned.*,
        cast({{ plan['from'] }} as bigint) as slice_from_version,
        cast({{ plan['to'] }} as bigint) as slice_to_version,
        current_timestamp() as slice_built_at,
        if(unioned.bronze_version is null, '{{ plan['marks'] | tojson }}', null) as slice_reader_marks
    from unioned
)

select * from final
{%- endmacro %}

{#- {'from', 'to', 'marks'}: the versions after the oldest fresh mark up to bronze's current
    version, or at most var gamelake_slice_max_versions of them holding at most var
    gamelake_slice_max_rows rows (`ingest refresh --continuous` bounds each build so a backlog is
    worked off in steps that fit in memory; the next build reads on from the marks), and each
    reader's mark. Readers without a fresh mark read a
    pinned snapshot instead and do not hold the slice back. -#}
{% macro _bronze_slice_plan() %}
    {%- set bronze = source('bronze', 'game_events') -%}
    {%- set current = gamelake_table_version(bronze) -%}
    {%- if current is none -%}
        {{ return({'from': 1, 'to': 0, 'marks': {}}) }}  {#- not registered yet: sqlfluff on a fresh clone -#}
    {%- endif -%}
    {%- set properties = {} -%}
    {%- for row in run_query("show tblproperties " ~ bronze) -%}
        {%- do properties.update({row[0]: row[1]}) -%}
    {%- endfor -%}
    {%- if properties.get('delta.enableChangeDataFeed') != 'true' -%}
        {%- if flags.WHICH not in ('run', 'build') -%}
            {{ return({'from': current + 1, 'to': current, 'marks': {}}) }}  {#- compile, docs, sqlfluff -#}
        {%- endif -%}
        {{ exceptions.raise_compiler_error(
            bronze ~ " has no change data feed (delta.enableChangeDataFeed): start `ingest run` once, "
            ~ "it enables it on the bronze table") }}
    {%- endif -%}
    {%- set previous = _previous_slice() -%}
    {%- set marks = {} -%}
    {%- set handed = _handed_reader_marks() -%}
    {%- for reader in _bronze_readers() -%}
        {%- set known = [] -%}
        {%- set carried = _carried_mark(reader.identifier, previous) -%}
        {%- if carried is not none -%}
            {%- do known.append(carried) -%}
        {%- endif -%}
        {#- a reader carried to the previous slice's end cannot be further: no need to ask -#}
        {%- set own = gamelake_bronze_mark(reader, handed) if carried is none or carried < previous.to else none -%}
        {%- if own is not none and own.fresh -%}
            {%- do known.append(own.version) -%}
        {%- endif -%}
        {%- if known and known | max <= current -%}
            {%- do marks.update({reader.identifier: known | max}) -%}
        {%- endif -%}
    {%- endfor -%}
    {%- set start = (marks.values() | min + 1) if marks else current + 1 -%}
    {%- set most = var('gamelake_slice_max_versions', none) -%}
    {%- set upper = [current, start + (most | int) - 1] | min if most and start <= current else current -%}
    {%- set upper = _rows_bounded_upper(start, upper) -%}
    {{ log("bronze slice: versions " ~ start ~ ".." ~ upper ~ " of " ~ current ~ " ("
        ~ marks | length ~ " readers with a fresh mark)") }}
    {{ return({'from': start, 'to': upper, 'marks': marks}) }}
{% endmacro %}

{#- The last version from `start` to `upper` whose slice holds at most var gamelake_slice_max_rows
    rows, and never fewer than one version. The rows per bronze version come from the refresh,
    which reads them in bronze's Delta log (the ingest's gamelake.rows) and hands them over in
    the Spark session's conf spark.gamelake.bronze_commit_rows; without it, `upper`. -#}
{% macro _rows_bounded_upper(start, upper) %}
    {%- set most = var('gamelake_slice_max_rows', none) -%}
    {%- if not most or start > upper -%}
        {{ return(upper) }}
    {%- endif -%}
    {%- set handed = run_query("set spark.gamelake.bronze_commit_rows")[0][1] -%}
    {%- if not handed or handed == '<undefined>' -%}
        {{ return(upper) }}
    {%- endif -%}
    {%- set rows = fromjson(handed) -%}
    {%- set slice = namespace(rows=0, upper=start, full=false) -%}
    {%- for version in range(start, upper + 1) if not slice.full -%}
        {%- set slice.rows = slice.rows + rows.get(version | string, 0) | int -%}
        {%- if version == start or slice.rows <= most | int -%}
            {%- set slice.upper = version -%}
        {%- else -%}
            {%- set slice.full = true -%}
        {%- endif -%}
    {%- endfor -%}
    {{ return(slice.upper) }}
{% endmacro %}

{#- The slice this build replaces, while it is still there: its bounds, the marks it was planned
    from, and the newest bronze version it holds per game ('*': of any game, for quarantine).
    None when there is none, it is stale, or it predates slice_reader_marks. -#}
{% macro _previous_slice() %}
    {%- set slice = api.Relation.create(schema=this.schema, identifier=this.identifier) -%}
    {%- if not gamelake_relation_exists(slice)
        or 'slice_reader_marks' not in adapter.get_columns_in_relation(slice) | map(attribute='name') | list -%}
        {{ return(none) }}
    {%- endif -%}
    {%- set bounds = gamelake_slice_bounds(slice) -%}
    {%- if bounds is none or not bounds.fresh -%}
        {{ return(none) }}
    {%- endif -%}
    {%- set newest = {'*': -1} -%}
    {%- for row in run_query("select game_slug, max(bronze_version) from " ~ slice
            ~ " where bronze_version is not null group by game_slug") -%}
        {%- do newest.update({row[0]: row[1] | int}) -%}
        {%- do newest.update({'*': [newest['*'], row[1] | int] | max}) -%}
    {%- endfor -%}
    {%- do bounds.update({'newest': newest}) -%}
    {{ return(bounds) }}
{% endmacro %}

{#- A reader's mark as the previous slice leaves it: that slice's upper bound when the slice held
    no rows for it after the mark it was planned from (nothing to read, so nothing to build),
    else that mark (its own build, if it committed, moved its own mark further). -#}
{% macro _carried_mark(reader, previous) %}
    {%- if previous is none or reader not in previous.reader_marks -%}
        {{ return(none) }}
    {%- endif -%}
    {%- set held = previous.reader_marks[reader] -%}
    {%- set game = reader[7:] if reader.startswith('silver_') and reader != 'silver_quarantine' else '*' -%}
    {%- if held + 1 >= previous['from'] and previous.newest.get(game, -1) <= held -%}
        {{ return(previous.to) }}
    {%- endif -%}
    {{ return(held) }}
{% endmacro %}

{#- The existing tables that read the slice: quarantine and active games' silver. -#}
{% macro _bronze_readers() %}
    {%- set schema = generate_schema_name('silver', model) -%}
    {%- set names = ['silver_quarantine'] -%}
    {%- for row in run_query("select game_slug from " ~ ref('games') ~ " where is_active") -%}
        {%- do names.append('silver_' ~ assert_game_slug(row[0]) ~ row[0]) -%}
    {%- endfor -%}
    {%- set existing = [] -%}
    {%- if run_query("show schemas like '" ~ schema ~ "'") | length > 0 -%}
        {%- for row in run_query("show tables in " ~ schema) -%}
            {%- do existing.append(row['tableName']) -%}
        {%- endfor -%}
    {%- endif -%}
    {{ return(_silver_relations(schema, names, existing)) }}
{% endmacro %}

{% macro _silver_relations(schema, names, existing) %}
    {%- set relations = [] -%}
    {%- for name in names if name in existing -%}
        {%- do relations.append(api.Relation.create(schema=schema, identifier=name)) -%}
    {%- endfor -%}
    {{ return(relations) }}
{% endmacro %}
