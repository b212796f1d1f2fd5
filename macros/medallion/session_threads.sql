{#- A bronze reader's mark rides in its insert's commit through the Spark session's conf
    spark.databricks.delta.commitInfo.userMetadata (macros/medallion/bronze_marks.sql). On the
    local target (dbt-spark's `session` method) every dbt thread shares one Spark session, so a
    second thread's model could commit under, or reset, the first one's mark. The insert's own
    write option would not be shared, but Delta drops it when the insert reads its own table, as
    silver's dedup does (bench/results/mark_commit.md). So a build on a shared session that
    selects a bronze reader runs one thread. Gold sets no session conf (its mark is a column of
    its MERGE), so a build of gold alone keeps its threads: the refresh builds silver with one
    thread, then gold with several (ingest/ops/refresh_selection.py). The cluster target gives
    each thread its own Thrift session and keeps its threads. -#}
{% macro gamelake_assert_threads_fit_the_session() %}
    {%- if execute and adapter.config.credentials.method == 'session' and target.threads > 1 -%}
        {%- set readers = _selected_bronze_readers() -%}
        {%- if readers | length > 0 -%}
            {{ exceptions.raise_compiler_error(
                "target '" ~ target.name ~ "' runs dbt's " ~ target.threads ~ " threads in one shared Spark "
                ~ "session, where the mark of a bronze reader (" ~ readers[:3] | join(', ')
                ~ (', ...' if readers | length > 3 else '') ~ ") could ride in another table's commit. "
                ~ "Build the bronze readers with one thread (GAMELAKE_DBT_THREADS=1, or --threads 1), "
                ~ "or use the cluster target (--target cluster), where each thread has its own session.") }}
        {%- endif -%}
    {%- endif -%}
    {{ return('') }}
{% endmacro %}

{#- The selected models whose pre-hook puts a bronze mark in the session's conf. -#}
{% macro _selected_bronze_readers() %}
    {%- set readers = [] -%}
    {%- for unique_id in selected_resources -%}
        {%- set node = graph.nodes.get(unique_id) -%}
        {%- set hooks = node.config.get('pre-hook', []) if node else [] -%}
        {%- for hook in hooks if 'gamelake_bronze_mark_in_commit' in hook.get('sql', '') -%}
            {%- if loop.first -%}{%- do readers.append(node.name) -%}{%- endif -%}
        {%- endfor -%}
    {%- endfor -%}
    {{ return(readers) }}
{% endmacro %}
