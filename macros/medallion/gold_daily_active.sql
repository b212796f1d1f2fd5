{#- Daily active players of one game. Distinct counts do not add up across runs,
    so each run recomputes exactly the event dates that received new silver rows
    (from silver's change feed after this table's silver_version, named as literals, so
    Delta reads only those event_date partitions of silver) and merges them by event_date. -#}
{% macro gold_daily_active(game_slug) %}
    {{- assert_game_slug(game_slug) -}}
    {{- config(unique_key='event_date') -}}
    {%- set silver = ref('silver_' ~ game_slug) -%}
    {%- set plan = gamelake_silver_read_plan(silver) -%}
    {%- set touched = _touched_dates(silver, plan) -%}
with day_events as (
    select * from {{ silver }}{% if execute %} version as of {{ plan.to }}{% endif %}
    where {{ touched }}
),

final as (
    select
        {{ gamelake_gold_key('event_date', 'gold_' ~ game_slug ~ '_daily_active') }} as event_date,
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


{#- The predicate on silver's event_date that selects the dates with new rows in `plan`. -#}
{% macro _touched_dates(silver, plan) %}
    {%- if not execute or plan.mark is none -%}
        {{ return('true') }}  {#- no mark: every date is recomputed -#}
    {%- endif -%}
    {%- set dates = run_query(
        "select distinct cast(event_date as string) from (" ~ gamelake_unread_silver(silver, plan) ~ ")") -%}
    {%- if dates | length == 0 -%}
        {{ return('false') }}
    {%- endif -%}
    {{ return("event_date in (date '" ~ dates.columns[0].values() | join("', date '") ~ "')") }}
{% endmacro %}
