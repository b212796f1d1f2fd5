{#- A gold table's key, or the build's error naming the table: grouped by its key, the batch
    holds each key once, and a row without one must not land. coalesce evaluates the
    error only for a null key. -#}
{% macro gamelake_gold_key(column, table) -%}
coalesce({{ column }}, raise_error('{{ table }}: a source row without its {{ column }}'))
{%- endmacro %}
