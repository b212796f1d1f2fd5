{#- How gold reads silver: the rows inserted into a silver table after the silver Delta version
    this gold table holds (its largest silver_version), from silver's change data feed. Gold
    stores silver_version in the same merge as the rows it adds up, so the mark and the counts
    commit together: a crash leaves both behind, and nothing is counted twice. With no mark (a
    first build, or a table built before the mark existed) gold recomputes from a pinned
    snapshot and replaces its rows. `ingest refresh` reads the marks of the games it builds
    from gold's files once per cycle, under the build lock, and hands them over in the session
    conf spark.gamelake.gold_marks (ingest/ops/cycle_facts.py); a build without it asks Spark.
    `columns` are the stored table's, when Spark was asked; none when the mark was handed, which
    only a table holding every column its model reads is (ingest/ops/gold_marks.py).
    Silver keeps a few hours of Delta log (ingest refresh --log-hours): a mark whose next commit
    the log no longer holds is stale, handed as null or found so in silver's history, and gold
    recomputes from the pinned snapshot as it does without a mark. -#}
{% macro gamelake_silver_read_plan(silver) %}
    {%- if not execute -%}
        {{ return({'mark': none, 'to': 0, 'columns': []}) }}
    {%- endif -%}
    {%- set to = gamelake_table_version(silver) -%}
    {%- if to is none -%}
        {{ return({'mark': none, 'to': 0, 'columns': []}) }}  {#- sqlfluff compiling a fresh clone -#}
    {%- endif -%}
    {%- set handed = _handed_conf('spark.gamelake.gold_marks') -%}
    {%- set name = this.schema ~ '.' ~ this.identifier -%}
    {%- if is_incremental() and name in handed -%}
        {%- set mark = handed[name] | int if handed[name] is not none else none -%}
        {{ return({'mark': mark, 'to': to, 'columns': none}) }}
    {%- endif -%}
    {%- set mark = none -%}
    {%- set columns = adapter.get_columns_in_relation(this) | map(attribute='name') | list
        if is_incremental() else [] -%}
    {%- if 'silver_version' in columns -%}
        {%- set held = run_query("select max(silver_version) from " ~ this)[0][0] -%}
        {%- set mark = held | int if held is not none else none -%}
    {%- endif -%}
    {%- if mark is not none and mark < to and not _silver_log_holds(silver, mark + 1, to) -%}
        {%- set mark = none -%}
    {%- endif -%}
    {{ return({'mark': mark, 'to': to, 'columns': columns}) }}
{% endmacro %}

{#- Whether silver's history still holds commit `first` (its commits `first` to `to`: a log
    cleanup removes the oldest first). -#}
{% macro _silver_log_holds(silver, first, to) %}
    {%- set versions = run_query("describe history " ~ silver ~ " limit " ~ (to - first + 1))
        .columns['version'].values() -%}
    {{ return(first in versions | map('int') | list) }}
{% endmacro %}

{#- The silver rows of `plan`, each with the silver_version it was inserted in. -#}
{% macro gamelake_unread_silver(silver, plan) %}
    {%- if plan.mark is none %}
    select
        *,
        cast({{ plan.to }} as bigint) as silver_version
    from {{ silver }} version as of {{ plan.to }}
    {%- elif plan.mark < plan.to %}
    select
        * except (_change_type, _commit_version, _commit_timestamp),
        _commit_version as silver_version
    from table_changes('{{ silver }}', {{ plan.mark + 1 }}, {{ plan.to }})
    where _change_type = 'insert'
    {%- else %}
    select
        *,
        cast(null as bigint) as silver_version
    from {{ silver }}
    where false
    {%- endif %}
{% endmacro %}
