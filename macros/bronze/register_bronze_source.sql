{#- on-run-start: make the ingest-owned bronze Delta table queryable as the
    dbt source bronze.game_events. Idempotent; never copies or moves data. -#}
{% macro register_bronze_source(source_name='bronze', table_name='game_events') %}
    {%- if not execute -%}
        {{ return('') }}
    {%- endif -%}
    {%- set matches = graph.sources.values()
        | selectattr('source_name', 'equalto', source_name)
        | selectattr('name', 'equalto', table_name) | list -%}
    {%- if matches | length != 1 -%}
        {{ exceptions.raise_compiler_error(
            "register_bronze_source: no source '" ~ source_name ~ "." ~ table_name ~ "' is declared") }}
    {%- endif -%}
    {%- set bronze = matches[0] -%}
    {%- set location = _bronze_location() -%}
    {%- do run_query("create schema if not exists " ~ bronze.schema) -%}
    {%- do run_query(
        "create table if not exists " ~ bronze.schema ~ "." ~ bronze.identifier
        ~ " using delta location '" ~ location ~ "'") -%}
    {%- do _check_bronze_location(bronze.schema ~ "." ~ bronze.identifier, location) -%}
    {{ log("bronze source " ~ bronze.schema ~ "." ~ bronze.identifier ~ " -> " ~ location) }}
    {{ return('') }}
{% endmacro %}

{#- A metastore shared by several lakehouses (or a moved warehouse) can hold bronze registered
    elsewhere; `create table if not exists` keeps that silently, so compare. -#}
{% macro _check_bronze_location(table, location) %}
    {%- set registered = [] -%}
    {%- for row in run_query("describe table extended " ~ table) -%}
        {%- if row[0] == 'Location' -%}{%- do registered.append(row[1]) -%}{%- endif -%}
    {%- endfor -%}
    {%- set found = _without_file_scheme(registered[0] if registered else '') -%}
    {%- if found != _without_file_scheme(location) -%}
        {{ exceptions.raise_compiler_error(
            table ~ " is registered at " ~ found ~ " in the metastore, but this project's bronze is at "
            ~ location ~ ": another lakehouse shares the metastore. Give each lakehouse a metastore of its "
            ~ "own, or drop the old registration (`drop table " ~ table ~ "`; its data stays)") }}
    {%- endif -%}
{% endmacro %}

{% macro _without_file_scheme(location) %}
    {{ return((location | replace('file://', '', 1) | replace('file:', '', 1)).rstrip('/')) }}
{% endmacro %}

{#- GAMELAKE_BRONZE_PATH wins; otherwise spark.gamelake.bronze.path, which
    ingest/core/spark/session.py derives from the warehouse folder. -#}
{% macro _bronze_location() %}
    {%- set location = env_var('GAMELAKE_BRONZE_PATH', '') -%}
    {%- if not location -%}
        {%- set conf = run_query("set spark.gamelake.bronze.path") -%}
        {%- set location = conf.columns[1].values()[0] if conf.rows | length > 0 else '' -%}
    {%- endif -%}
    {%- if not location or location == '<undefined>' -%}
        {{ exceptions.raise_compiler_error(
            "bronze location unknown: set GAMELAKE_BRONZE_PATH or run `python -m ingest.core.spark.session write-defaults`") }}
    {%- endif -%}
    {%- if "'" in location or "\\" in location -%}
        {{ exceptions.raise_compiler_error("bronze location must not contain quotes or backslashes: " ~ location) }}
    {%- endif -%}
    {{ return(location) }}
{% endmacro %}
