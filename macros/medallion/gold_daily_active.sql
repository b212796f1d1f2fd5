{#- Daily active players of one game. Distinct counts do not add up across runs,
    so each run recomputes exactly the event dates that received new silver rows
    (from silver's change feed after this table's silver_version; silver is partitioned
    by event_date, so only those partitions are read) and merges them by event_date. -#}
{% macro gold_daily_active(game_slug) %}
    {{- assert_game_slug(game_slug) -}}
    {{- config(unique_key='event_date') -}}
    {%- set silver = ref('silver_' ~ game_slug) -%}
    {%- set plan = gamelake_silver_read_plan(silver) -%}
with silver_events as (
    select * from {{ silver }}{% if execute %} version as of {{ plan.to }}{% endif %}
),

new_events as (
    {{- gamelake_unread_silver(silver, plan) }}
),

touched_dates as (
    select distinct event_date
    from new_events
),

day_events as (
    select silver_events.*
    from silver_events
    left semi join touched_dates
        on silver_events.event_date = touched_dates.event_date
),

final as (
    select
        event_date,
        '{{ game_slug }}' as game_slug,
        count(distinct gamer_id) as active_players,
        count(distinct if(event_type = 'purchase', gamer_id, null)) as paying_players,
        count_if(event_type = 'session_start') as session_count,
        count_if(event_type = 'match_start') as match_count,
        count(*) as event_count,
        max(silver_loaded_at) as silver_loaded_at,
        cast({{ plan.to }} as bigint) as silver_version,
        current_timestamp() as updated_at
    from day_events
    group by event_date
)

select * from final
{%- endmacro %}
