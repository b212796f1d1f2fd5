{#- The bronze -> staging contract: rename to house style, cast to fixed types,
    and fill columns of schema versions that have not landed yet with typed nulls,
    so everything downstream sees one stable shape. Bronze columns unknown here
    (a future schema version) pass through under their own name. -#}
{% macro stage_bronze_events(source_relation) %}
    {%- set present = {} -%}
    {%- if execute -%}
        {%- for column in adapter.get_columns_in_relation(source_relation) -%}
            {%- do present.update({column.name | lower: column.data_type}) -%}
        {%- endfor -%}
    {%- endif -%}
    {%- set known = _bronze_event_columns() -%}
    {%- set known_names = known | map(attribute='bronze') | list -%}
with bronze_game_events as (
    select * from {{ source_relation }}
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
        {%- for name in present if name not in known_names %}
        `{{ name }}`,
        {%- endfor %}
        concat_ws(
            ':', _kafka_topic, cast(_kafka_partition as string), cast(_kafka_offset as string)
        ) as bronze_row_key
    from bronze_game_events
)

select * from renamed
{%- endmacro %}

{#- bronze name, staging name, type, and the event schema version that added it. -#}
{% macro _bronze_event_columns() %}
    {{ return([
        {'bronze': 'event_id', 'name': 'event_id', 'type': 'string', 'since': 1},
        {'bronze': 'game_name', 'name': 'game_slug', 'type': 'string', 'since': 1},
        {'bronze': 'gamer_id', 'name': 'gamer_id', 'type': 'string', 'since': 1},
        {'bronze': 'event_type', 'name': 'event_type', 'type': 'string', 'since': 1},
        {'bronze': 'event_timestamp', 'name': 'event_at', 'type': 'timestamp', 'since': 1},
        {'bronze': 'event_date', 'name': 'event_date', 'type': 'date', 'since': 1},
        {'bronze': 'device_id', 'name': 'device_id', 'type': 'string', 'since': 1},
        {'bronze': 'session_id', 'name': 'session_id', 'type': 'string', 'since': 2},
        {'bronze': 'score', 'name': 'score', 'type': 'bigint', 'since': 2},
        {'bronze': 'level', 'name': 'level', 'type': 'int', 'since': 2},
        {'bronze': 'duration_ms', 'name': 'duration_ms', 'type': 'bigint', 'since': 3},
        {'bronze': 'platform', 'name': 'platform', 'type': 'string', 'since': 3},
        {'bronze': 'region', 'name': 'region', 'type': 'string', 'since': 3},
        {'bronze': 'client_build', 'name': 'client_build', 'type': 'string', 'since': 4},
        {'bronze': 'is_ranked', 'name': 'is_ranked', 'type': 'boolean', 'since': 4},
        {'bronze': 'network_latency_ms', 'name': 'network_latency_ms', 'type': 'double', 'since': 4},
        {'bronze': '_kafka_topic', 'name': 'kafka_topic', 'type': 'string', 'since': 1},
        {'bronze': '_kafka_partition', 'name': 'kafka_partition', 'type': 'int', 'since': 1},
        {'bronze': '_kafka_offset', 'name': 'kafka_offset', 'type': 'bigint', 'since': 1},
        {'bronze': '_kafka_timestamp', 'name': 'kafka_published_at', 'type': 'timestamp', 'since': 1},
        {'bronze': '_kafka_key', 'name': 'kafka_key', 'type': 'string', 'since': 1},
        {'bronze': '_schema_id', 'name': 'schema_id', 'type': 'int', 'since': 1},
        {'bronze': '_ingested_at', 'name': 'ingested_at', 'type': 'timestamp', 'since': 1},
    ]) }}
{% endmacro %}
