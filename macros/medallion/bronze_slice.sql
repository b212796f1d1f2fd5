{#- stg_bronze__new_events: the bronze rows that landed since the oldest fresh mark of the
    readers that take part (quarantine, and the silver table of every active game), read once
    from bronze's change data feed (table_changes, by Delta version: what is new is decided by
    the Delta log, not by clocks) and staged. Every silver model and quarantine read their part
    of it, so the number of games does not multiply the bronze scan. Rebuilt each build.

    One extra row, with a null bronze_version, holds the bounds (slice_from_version,
    slice_to_version, slice_built_at), so the bounds and the rows they describe are one commit
    and an empty range still moves the readers' marks. -#}
{% macro bronze_slice() %}
    {%- do ref('games') -%}  {#- which games are active: read while executing only -#}
    {%- set plan = _bronze_slice_plan() if execute else {'from': 1, 'to': 0} -%}
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
        current_timestamp() as slice_built_at
    from unioned
)

select * from final
{%- endmacro %}

{#- {'from', 'to'}: the versions after the oldest fresh mark up to bronze's current version, or
    at most var gamelake_slice_max_versions of them (`ingest refresh --continuous` bounds each
    build so a backlog is worked off in steps that fit in memory; the next build reads on from
    the marks). Readers without a fresh mark read a pinned snapshot instead and do not hold the
    slice back. -#}
{% macro _bronze_slice_plan() %}
    {%- set bronze = source('bronze', 'game_events') -%}
    {%- set current = gamelake_table_version(bronze) -%}
    {%- if current is none -%}
        {{ return({'from': 1, 'to': 0}) }}  {#- not registered yet: sqlfluff on a fresh clone -#}
    {%- endif -%}
    {%- set properties = {} -%}
    {%- for row in run_query("show tblproperties " ~ bronze) -%}
        {%- do properties.update({row[0]: row[1]}) -%}
    {%- endfor -%}
    {%- if properties.get('delta.enableChangeDataFeed') != 'true' -%}
        {%- if flags.WHICH not in ('run', 'build') -%}
            {{ return({'from': current + 1, 'to': current}) }}  {#- compile, docs, sqlfluff -#}
        {%- endif -%}
        {{ exceptions.raise_compiler_error(
            bronze ~ " has no change data feed (delta.enableChangeDataFeed): start `ingest run` once, "
            ~ "it enables it on the bronze table") }}
    {%- endif -%}
    {%- set marks = [] -%}
    {%- for reader in _bronze_readers() -%}
        {%- set mark = gamelake_bronze_mark(reader) -%}
        {%- if mark is not none and mark.fresh and mark.version <= current -%}
            {%- do marks.append(mark.version) -%}
        {%- endif -%}
    {%- endfor -%}
    {%- set start = (marks | min + 1) if marks else current + 1 -%}
    {%- set most = var('gamelake_slice_max_versions', none) -%}
    {%- set upper = [current, start + (most | int) - 1] | min if most and start <= current else current -%}
    {{ log("bronze slice: versions " ~ start ~ ".." ~ upper ~ " of " ~ current ~ " ("
        ~ marks | length ~ " readers with a fresh mark)") }}
    {{ return({'from': start, 'to': upper}) }}
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
