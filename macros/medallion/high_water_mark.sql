{#- The scalar subquery an incremental model filters its new rows on: the largest
    `column` this model already holds, minus `lookback_minutes`; the epoch when it
    is empty. Qualified, so the SQL stays lint-clean inside the caller's query. -#}
{% macro high_water_mark(column, lookback_minutes=0) %}
    {%- set mark = "coalesce(max(previous_run." ~ column ~ "), timestamp '1970-01-01 00:00:00')" -%}
(
    {%- if lookback_minutes %}
    select
        {{ mark }}
        - interval {{ lookback_minutes }} minutes
    {%- else %}
    select {{ mark }}
    {%- endif %}
    from {{ this }} as previous_run
)
{%- endmacro %}
