{#- The bronze -> staging contract (ingest/core/bronze_contract.yml, generated into
    _bronze_event_columns): rename to house style, cast to fixed types, and fill columns
    of schema versions that have not landed yet with typed nulls, so everything
    downstream sees one stable shape. Bronze columns unknown to the contract (a future
    schema version) pass through under their own name, or, when that name is a staging
    column already (a producer field called schema_id), as _bronze_passthrough_prefix()
    + their name (the contract's passthrough_prefix rule).
    `from_sql` reads something shaped like bronze instead of the relation itself (a change feed
    range or a pinned version); `extra` are more select items over it (the bronze version). -#}
{% macro stage_bronze_events(source_relation, from_sql=none, extra=[]) %}
    {%- set present = {} -%}
    {%- if execute -%}
        {%- for column in adapter.get_columns_in_relation(source_relation) -%}
            {%- do present.update({column.name | lower: column.data_type}) -%}
        {%- endfor -%}
    {%- endif -%}
    {%- set known = _bronze_event_columns() -%}
    {%- set passthrough = _bronze_passthrough_columns(present, known) -%}
with bronze_game_events as (
    select * from {{ from_sql or source_relation }}
),

renamed as (
    select
        {%- for column in known %}
        {% if column.bronze in present or not execute -%}
            cast({{ column.bronze }} as {{ column.type }})
        {%- else -%}
            cast(null as {{ column.type }})
        {%- endif %} as {{ column.name }},
        {%- endfor %}
        {%- for name, alias in passthrough %}
        `{{ name }}`{% if alias != name %} as `{{ alias }}`{% endif %},
        {%- endfor %}
        {%- for item in extra %}
        {{ item }},
        {%- endfor %}
        concat_ws(
            ':', _kafka_topic, cast(_kafka_partition as string), cast(_kafka_offset as string)
        ) as bronze_row_key
    from bronze_game_events
)

select * from renamed
{%- endmacro %}

{#- [(bronze name, staging alias)] of the bronze columns the contract does not list. -#}
{% macro _bronze_passthrough_columns(present, known) %}
    {%- set known_names = known | map(attribute='bronze') | list -%}
    {%- set taken = (known | map(attribute='name') | list) + ['bronze_row_key'] -%}
    {%- set prefix = _bronze_passthrough_prefix() -%}
    {%- set columns = [] -%}
    {%- for name in present if name not in known_names -%}
        {%- set alias = prefix ~ name if name in taken else name -%}
        {%- if alias != name and alias in present -%}
            {{ exceptions.raise_compiler_error(
                "bronze has both " ~ name ~ " and " ~ alias ~ ": " ~ name ~ " is a staging column, "
                ~ "so the passthrough_prefix rule would name it " ~ alias ~ ", which bronze holds "
                ~ "too. Add one of them to ingest/core/bronze_contract.yml under another name."
            ) }}
        {%- endif -%}
        {%- do columns.append((name, alias)) -%}
    {%- endfor -%}
    {{ return(columns) }}
{% endmacro %}
