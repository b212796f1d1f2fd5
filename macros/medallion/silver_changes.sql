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
    recomputes from the pinned snapshot as it does without a mark. `moved`: whether silver may hold
    rows after the mark (_silver_commits_after; a handed mark below silver's version counts). -#}
{% macro gamelake_silver_read_plan(silver) %}
    {%- if not execute -%}
        {{ return({'mark': none, 'to': 0, 'columns': [], 'moved': true}) }}
    {%- endif -%}
    {%- set to = gamelake_table_version(silver) -%}
    {%- if to is none -%}
        {{ return({'mark': none, 'to': 0, 'columns': [], 'moved': true}) }}  {#- sqlfluff compiling a fresh clone -#}
    {%- endif -%}
    {%- set handed = _handed_conf('spark.gamelake.gold_marks') -%}
    {%- set name = this.schema ~ '.' ~ this.identifier -%}
    {%- if is_incremental() and name in handed -%}
        {%- set mark = handed[name] | int if handed[name] is not none else none -%}
        {{ return({'mark': mark, 'to': to, 'columns': none, 'moved': mark is none or mark < to}) }}
    {%- endif -%}
    {%- set mark = none -%}
    {%- set columns = adapter.get_columns_in_relation(this) | map(attribute='name') | list
        if is_incremental() else [] -%}
    {%- if 'silver_version' in columns -%}
        {%- set held = run_query("select max(silver_version) from " ~ this)[0][0] -%}
        {%- set mark = held | int if held is not none else none -%}
    {%- endif -%}
    {%- set after = _silver_commits_after(silver, mark, to) if mark is not none and mark < to
        else {'held': true, 'rows': mark is none or mark < to} -%}
    {{ return({'mark': mark if after.held else none, 'to': to, 'columns': columns,
               'moved': after.rows or not after.held}) }}
{% endmacro %}

{#- silver's commits after `mark` up to `to`, from its history: {'held': whether the log still holds
    the first of them (a log cleanup removes the oldest first), 'rows': whether any may have added
    rows}. Silver's build records an empty commit to move its bronze mark (bronze_marks.sql), and
    the refresh's upkeep commits OPTIMIZE and VACUUM: neither adds a row, and a build that reads
    only them has nothing to add (gamelake_nothing_unread). An operation not known here counts as
    rows. -#}
{% macro _silver_commits_after(silver, mark, to) %}
    {%- set commits = run_query("describe history " ~ silver ~ " limit " ~ (to - mark)) -%}
    {%- set rows = [] -%}
    {%- for commit in commits if commit['version'] | int > mark -%}
        {%- set metrics = fromjson(commit['operationMetrics'] or '{}') -%}
        {%- set empty_write = commit['operation'] == 'WRITE' and metrics.get('numOutputRows') == '0' -%}
        {%- if not empty_write and commit['operation'] not in _silver_rowless_operations() -%}
            {%- do rows.append(commit['version']) -%}
        {%- endif -%}
    {%- endfor -%}
    {{ return({'held': (mark + 1) in commits.columns['version'].values() | map('int') | list,
               'rows': rows | length > 0}) }}
{% endmacro %}

{% macro _silver_rowless_operations() %}
    {{- return(['OPTIMIZE', 'VACUUM START', 'VACUUM END', 'SET TBLPROPERTIES']) -}}
{% endmacro %}

{#- Whether this build has nothing to add: silver has no rows after the table's mark, and the table
    holds every column its model documents (a table built before a column gets it filled, as
    player_agg's last_purchase_at). The model's query then opens with gamelake_unchanged_marker(),
    and the incremental materialization sends no statement: no Spark job, no commit, where a
    rewrite of the table would make a new file of the same rows (macros/project/lean_incremental.sql). -#}
{% macro gamelake_nothing_unread(plan) %}
    {%- set stored = plan.columns -%}
    {%- set missing = [] if stored is none else model.columns.keys() | reject('in', stored) | list -%}
    {{ return(is_incremental() and plan.mark is not none and not plan.moved and not missing) }}
{% endmacro %}

{% macro gamelake_unchanged_marker() %}
    {{- return('/* gamelake: silver has not moved past this table\'s mark */') -}}
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
