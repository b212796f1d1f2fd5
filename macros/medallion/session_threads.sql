{#- A bronze reader's mark rides in its insert's commit through the Spark session's conf
    spark.databricks.delta.commitInfo.userMetadata (macros/medallion/bronze_marks.sql). On the
    local target (dbt-spark's `session` method) every dbt thread shares one Spark session, so a
    second thread's model could commit under, or reset, the first one's mark. The insert's own
    write option would not be shared, but Delta drops it when the insert reads its own table, as
    silver's dedup does (bench/results/mark_commit.md). So a build on a shared session that
    selects a bronze reader runs one thread. `ingest refresh --silver-threads 2` gives each dbt
    thread of its silver step a Spark session of its own (ingest/ops/thread_sessions.py), which
    says so in spark.gamelake.session_per_thread, and keeps its threads. Gold sets no session conf (its mark
    is a column of its MERGE), so a build of gold alone keeps its threads. The cluster target
    gives each thread its own Thrift session and keeps its threads. -#}
{% macro gamelake_assert_threads_fit_the_session() %}
    {%- if execute and adapter.config.credentials.method == 'session' and target.threads > 1 -%}
        {%- set readers = _selected_bronze_readers() -%}
        {%- if readers | length > 0 and not _session_per_thread() -%}
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

{#- Whether this thread's Spark session is its own (ingest/ops/thread_sessions.py). -#}
{% macro _session_per_thread() %}
    {%- set found = run_query("set spark.gamelake.session_per_thread") -%}
    {{ return(found.rows | length > 0 and found.columns[1].values()[0] == 'true') }}
{% endmacro %}
