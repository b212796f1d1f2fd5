{#- dbt's test relation with the `where` config applied, plus one gamelake value:
    where: gamelake_latest_build tests only the event_date partitions that the relation's
    latest build loaded rows into (the largest silver_loaded_at, which Delta answers from
    its statistics). A duplicate event shares its event_date, so a uniqueness test there
    still sees a new row that repeats an old one, and the cost follows the new data, not
    history. The audit (tag:audit) covers whole tables. -#}
{% macro get_where_subquery(relation) -%}
    {%- set where = config.get('where', '') -%}
    {%- if where == 'gamelake_latest_build' -%}
        {%- set where = _gamelake_latest_build_partitions(relation) -%}
    {%- endif -%}
    {%- if where -%}
        {%- set filtered -%}
            (select * from {{ relation }} where {{ where }}) dbt_subquery
        {%- endset -%}
        {{ return(filtered) }}
    {%- else -%}
        {{ return(relation) }}
    {%- endif -%}
{%- endmacro %}

{% macro _gamelake_latest_build_partitions(relation) %}
    {%- if not execute -%}
        {{ return('true') }}
    {%- endif -%}
    {%- set latest = run_query("select cast(max(silver_loaded_at) as string) from " ~ relation)[0][0] -%}
    {%- if latest is none -%}
        {{ return('false') }}
    {%- endif -%}
    {%- set dates = run_query(
        "select distinct cast(event_date as string) from " ~ relation
        ~ " where silver_loaded_at = timestamp'" ~ latest ~ "'") -%}
    {{ return("event_date in (date'" ~ dates.columns[0].values() | join("', date'") ~ "')") }}
{% endmacro %}
