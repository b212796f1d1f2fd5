{#- Layers are schemas of their own name (bronze, silver, gold, reference), not
    <target>_<layer>: the ingest service and analysts address them by layer. -#}
{% macro generate_schema_name(custom_schema_name, node) -%}
    {%- if custom_schema_name is none -%}
        {{ target.schema }}
    {%- else -%}
        {{ custom_schema_name | trim }}
    {%- endif -%}
{%- endmacro %}
