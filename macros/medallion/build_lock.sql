{#- One build at a time writes silver and gold: two builds reading the same bronze versions
    would both insert them. on-run-start takes the lock with a MERGE into a one-row Delta table;
    Delta's optimistic concurrency lets only one of two racing MERGEs commit, and the loser's
    build stops before any model runs. on-run-end releases it. A lock older than
    gamelake_build_lock_minutes is taken as left by a crashed build. A caller that holds the lock
    across invocations (the continuous refresh, ingest/ops/dbt_build_lock.py) names itself in
    the var gamelake_build_lock_held_by, and the hooks leave the lock to it. -#}
{% macro gamelake_acquire_build_lock(for_operation=false) %}
    {%- if not (for_operation or _gamelake_lock_applies()) -%}
        {{ return('') }}
    {%- endif -%}
    {%- if _gamelake_lock_held_by_caller() and not for_operation -%}
        {{ log("build lock held by the caller, " ~ var('gamelake_build_lock_held_by')) }}
        {{ return('') }}
    {%- endif -%}
    {%- set lock = _gamelake_lock_table() -%}
    {%- do run_query(_gamelake_lock_ddl(lock)) -%}
    {%- set taken = run_query(
        "merge into " ~ lock ~ " as held using (select 'build' as name, '" ~ invocation_id
        ~ "' as holder, current_timestamp() as taken_at) as wanted on held.name = wanted.name "
        ~ "when matched and held.taken_at < current_timestamp() - interval "
        ~ var('gamelake_build_lock_minutes') ~ " minutes then update set * "
        ~ "when not matched then insert *") -%}
    {#- The MERGE's own count says whether it wrote our row: one statement, where reading the
        lock back cost a second scan of the table (bench/results/build_lock.md). -#}
    {%- if _gamelake_rows_written(taken) == 1 -%}
        {{ log("build lock taken by invocation " ~ invocation_id) }}
        {{ return('') }}
    {%- endif -%}
    {%- set held = run_query("select holder, cast(taken_at as string) from " ~ lock ~ " where name = 'build'") -%}
    {%- if held[0][0] != invocation_id -%}
        {{ exceptions.raise_compiler_error(
            "another dbt build (invocation " ~ held[0][0] ~ ", since " ~ held[0][1] ~ " UTC) is writing "
            ~ "silver and gold. Wait for it; if it crashed, run `dbt run-operation gamelake_release_build_lock "
            ~ "--args '{force: true}'` (or wait " ~ var('gamelake_build_lock_minutes') ~ " minutes).") }}
    {%- endif -%}
    {{ log("build lock taken by invocation " ~ invocation_id) }}
    {{ return('') }}
{% endmacro %}

{% macro gamelake_release_build_lock(force=false, for_operation=false) %}
    {%- if not (force or for_operation or _gamelake_lock_applies()) -%}
        {{ return('') }}
    {%- endif -%}
    {%- if _gamelake_lock_held_by_caller() and not (force or for_operation) -%}
        {{ return('') }}
    {%- endif -%}
    {%- set lock = _gamelake_lock_table() -%}
    {%- do run_query(_gamelake_lock_ddl(lock)) -%}
    {%- if force -%}
        {%- do run_query("delete from " ~ lock) -%}
    {%- else -%}
        {%- do run_query("delete from " ~ lock ~ " where holder = '" ~ invocation_id ~ "'") -%}
    {%- endif -%}
    {{ return('') }}
{% endmacro %}

{#- num_affected_rows of a MERGE's result; none when the connection returned no count. -#}
{% macro _gamelake_rows_written(result) %}
    {%- if result is none or 'num_affected_rows' not in result.column_names or result.rows | length != 1 -%}
        {{ return(none) }}
    {%- endif -%}
    {{ return(result.columns['num_affected_rows'].values()[0] | int) }}
{% endmacro %}

{#- The lock's table, made on first use (ingest/ops/dbt_build_lock.py's LOCK_DDL is the same). -#}
{% macro _gamelake_lock_ddl(lock) %}
    {{- return("create table if not exists " ~ lock ~ " (name string, holder string, taken_at timestamp) using delta") -}}
{% endmacro %}

{% macro _gamelake_lock_table() %}
    {{ return(generate_schema_name('silver', none) ~ '.gamelake_build_lock') }}
{% endmacro %}

{#- Only commands that write models take the lock (and operations that write, by for_operation). -#}
{% macro _gamelake_lock_applies() %}
    {{ return(execute and flags.WHICH in ('run', 'build')) }}
{% endmacro %}

{#- The caller took the lock for this invocation and releases it after (the continuous refresh). -#}
{% macro _gamelake_lock_held_by_caller() %}
    {{ return(var('gamelake_build_lock_held_by', '') | length > 0) }}
{% endmacro %}
