{#- The event types of the event schema (ingest/proto), all versions. -#}
{% macro gamelake_event_types() %}
    {{ return([
        'session_start', 'session_end', 'match_start', 'match_end', 'level_up', 'purchase', 'achievement',
    ]) }}
{% endmacro %}
