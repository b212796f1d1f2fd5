{#- dbt-spark's incremental materialization, with one statement where it sends four. On a Delta
    table that exists, an append (silver, quarantine) or an overwrite of a table not partitioned
    (gold, rewritten whole) is sent as the model's query itself, WITH SCHEMA EVOLUTION and by
    name: Delta adds a column the query has and the table lacks in the same commit as the rows,
    which is what on_schema_change: append_new_columns asks for, and fails on a column it cannot
    add (DELTA_METADATA_MISMATCH), so nothing is dropped unseen. dbt-spark's path first creates a
    temporary view of the query, then describes the view and the table to compare their columns
    and the table again to list them (0.08 s a model, bench/results/refresh_profile.md, stop 58).
    A gold query that opens with gamelake_unchanged_marker() (its silver has no rows after its
    mark: gamelake_nothing_unread, macros/medallion/silver_changes.sql) sends no statement: no
    Spark job, no commit, where an overwrite would write the same rows to a new file.
    Everything else takes dbt-spark's path unchanged: a first build, a full refresh, a view, a
    Python model, another strategy (a MERGE) or schema policy, incremental predicates, a
    partitioned overwrite. GAMELAKE_INCREMENTAL=dbt-spark in the environment sends every
    build down dbt-spark's path (bench/cycle_pairs.py --compare one-statement measures both). -#}
{% materialization incremental, adapter='spark', supported_languages=['sql', 'python'] -%}
    {%- set existing = load_relation(this) -%}
    {%- if not gamelake_incremental_in_one_statement(existing) -%}
        {{ return(dbt.materialization_incremental_spark()) }}
    {%- endif -%}
    {{ run_hooks(pre_hooks) }}
    {%- if gamelake_unchanged_marker() in compiled_code -%}
        {#- a gold table whose silver has not moved (gamelake_nothing_unread) -#}
        {%- call noop_statement('main', 'UNCHANGED', 'UNCHANGED', 0) -%}{{ compiled_code }}{%- endcall -%}
    {%- else -%}
        {%- call statement('main') -%}
            {{ _one_statement(config.get('incremental_strategy') or 'append') }}
        {%- endcall -%}
    {%- endif -%}
    {%- do apply_grants(this, config.get('grants'), should_revoke(existing, full_refresh_mode=false)) -%}
    {%- do persist_docs(this, model) -%}
    {{ run_hooks(post_hooks) }}
    {{ return({'relations': [this]}) }}
{%- endmaterialization %}

{#- Whether this build of the model is one statement (see above). -#}
{% macro gamelake_incremental_in_one_statement(existing) %}
    {%- set path = env_var('GAMELAKE_INCREMENTAL', 'one-statement') -%}
    {%- if path not in ['one-statement', 'dbt-spark'] -%}
        {{ exceptions.raise_compiler_error("GAMELAKE_INCREMENTAL is '" ~ path
            ~ "': set it to one-statement (the default) or dbt-spark, or unset it") }}
    {%- endif -%}
    {%- set strategy = config.get('incremental_strategy') or 'append' -%}
    {#- dbt-spark overwrites the partitions of a partitioned table's rows (dynamic mode) -#}
    {%- set overwrites = strategy == 'insert_overwrite' and not config.get('partition_by') -%}
    {{ return(path == 'one-statement'
        and model.language == 'sql'
        and existing is not none and existing.is_table
        and not should_full_refresh()
        and config.get('file_format') == 'delta'
        and config.get('on_schema_change') == 'append_new_columns'
        and not (config.get('incremental_predicates') or config.get('predicates'))
        and (strategy == 'append' or overwrites)) }}
{% endmacro %}

{#- The query closes on a line of its own: a model may end in a line comment. -#}
{% macro _one_statement(strategy) %}
    {%- if strategy == 'insert_overwrite' -%}
        insert with schema evolution overwrite table {{ this }} by name
        {{ compiled_code }}
    {%- else -%}
        insert with schema evolution into {{ this }} by name
        {{ compiled_code }}
    {%- endif -%}
{% endmacro %}
