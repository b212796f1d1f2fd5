{#- A bronze reader's mark rides in its insert's commit through the Spark session's conf
    spark.databricks.delta.commitInfo.userMetadata (macros/medallion/bronze_marks.sql). On the
    local target (dbt-spark's `session` method) every dbt thread shares one Spark session, so a
    second thread's model could commit under, or reset, the first one's mark. The insert's own
    write option would not be shared, but Delta drops it when the insert reads its own table, as
    silver's dedup does (bench/results/mark_commit.md). So a build on a shared session runs one
    thread; the cluster target gives each thread its own Thrift session and keeps its threads. -#}
{% macro gamelake_assert_threads_fit_the_session() %}
    {%- if execute and adapter.config.credentials.method == 'session' and target.threads > 1 -%}
        {{ exceptions.raise_compiler_error(
            "target '" ~ target.name ~ "' runs dbt's " ~ target.threads ~ " threads in one shared Spark "
            ~ "session, where a silver table's mark could ride in another table's commit. Build it with "
            ~ "one thread (GAMELAKE_DBT_THREADS=1, or --threads 1), or use the cluster target "
            ~ "(--target cluster), where each thread has its own session.") }}
    {%- endif -%}
    {{ return('') }}
{% endmacro %}
