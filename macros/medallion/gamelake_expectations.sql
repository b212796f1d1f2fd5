{#- Data-quality rules in the manner of DLT expectations. Each rule is a SQL
    condition over a staging row (plus game_launch_date, the seed's launch_date of the row's
    game) that must hold, and an action when it does not:
      warn: keep the row, name the rule in silver's dq_warnings;
      drop: keep the row out of silver, land it in silver_quarantine with the rule;
      fail: stop the model run (assert_true), nothing of the batch is written. -#}
{% macro gamelake_expectations(action=none) %}
    {%- set actions = ['warn', 'drop', 'fail'] -%}
    {%- if action is not none and action not in actions -%}
        {{ exceptions.raise_compiler_error(
            "gamelake_expectations: action '" ~ action ~ "' is not one of " ~ actions | join(', ')) }}
    {%- endif -%}
    {%- set rules = [
        {'name': 'has_kafka_coordinates', 'action': 'fail',
         'condition': 'kafka_topic is not null and kafka_partition is not null and kafka_offset is not null'},
        {'name': 'has_event_id', 'action': 'drop', 'condition': "event_id is not null and event_id != ''"},
        {'name': 'has_gamer_id', 'action': 'drop', 'condition': "gamer_id is not null and gamer_id != ''"},
        {'name': 'has_event_time', 'action': 'drop', 'condition': 'event_at is not null'},
        {'name': 'known_event_type', 'action': 'drop',
         'condition': "event_type in ('" ~ gamelake_event_types() | join("', '") ~ "')"},
        {'name': 'not_from_the_future', 'action': 'drop',
         'condition': 'event_at is null or event_at <= ingested_at + interval '
            ~ var('gamelake_max_future_minutes') ~ ' minutes'},
        {'name': 'not_before_launch', 'action': 'drop',
         'condition': 'event_at is null or game_launch_date is null or to_date(event_at) >= game_launch_date'},
        {'name': 'score_not_negative', 'action': 'warn', 'condition': 'score is null or score >= 0'},
        {'name': 'latency_plausible', 'action': 'warn',
         'condition': 'network_latency_ms is null or network_latency_ms between 0 and 60000'},
    ] -%}
    {{ return(rules if action is none else rules | selectattr('action', 'equalto', action) | list) }}
{% endmacro %}
