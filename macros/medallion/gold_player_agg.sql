{#- Per gamer of one game. Incremental by merge: the silver rows inserted after the silver
    version this table holds (gamelake_silver_read_plan) are aggregated, then combined with
    the stored row of each touched gamer (counts add, mins and maxes merge). The stored rows are
    joined unfiltered: a filter `gamer_id in (select gamer_id from batch)` computes the batch
    (silver's change feed) a second time, 1.2 s of source against 0.6 s
    (bench/results/gold_merge.md), and the MERGE reads the whole table anyway. Without a mark
    the totals are recomputed from silver and replace the stored rows.
    session_count counts session_start events: each session emits exactly one,
    and silver holds each event once, so it counts sessions, not events.
    last_purchase_at is what daily_active's paying_players needs to add a cycle's payers
    without reading the day (gold_daily_active.sql). A table built before it had the column
    holds null there for earlier payers: that stays null (unknown), never a later purchase
    standing for the latest. -#}
{% macro gold_player_agg(game_slug) %}
    {{- assert_game_slug(game_slug) -}}
    {{- config(unique_key='gamer_id') -}}
    {%- set counts = ['event_count', 'session_count', 'match_count', 'purchase_count',
                      'achievement_count', 'level_up_count', 'total_session_ms'] -%}
    {%- set plan = gamelake_silver_read_plan(ref('silver_' ~ game_slug)) -%}
    {#- a table built before last_purchase_at has no such column until this merge adds it -#}
    {%- set stored_purchase = 'previous_totals.last_purchase_at'
        if plan.columns is none or 'last_purchase_at' in plan.columns else 'cast(null as timestamp)' -%}
with new_events as (
    {{- gamelake_unread_silver(ref('silver_' ~ game_slug), plan) }}
),

batch as (
    select
        {{ gamelake_gold_key('gamer_id', 'gold_' ~ game_slug ~ '_player_agg') }} as gamer_id,
        count(*) as event_count,
        count_if(event_type = 'session_start') as session_count,
        count_if(event_type = 'match_start') as match_count,
        count_if(event_type = 'purchase') as purchase_count,
        count_if(event_type = 'achievement') as achievement_count,
        count_if(event_type = 'level_up') as level_up_count,
        coalesce(sum(if(event_type = 'session_end', duration_ms, 0)), 0) as total_session_ms,
        max(score) as best_score,
        max(level) as max_level,
        min(event_at) as first_event_at,
        max(event_at) as last_event_at,
        max(if(event_type = 'purchase', event_at, null)) as last_purchase_at,
        max(silver_loaded_at) as silver_loaded_at,
        max(silver_version) as silver_version
    from new_events
    group by gamer_id
),

{%- if is_incremental() and plan.mark is not none %}

previous_totals as (
    select * from {{ this }}
),

merged as (
    select
        batch.gamer_id,
        {%- for column in counts %}
        batch.{{ column }} + coalesce(previous_totals.{{ column }}, 0) as {{ column }},
        {%- endfor %}
        greatest(batch.best_score, previous_totals.best_score) as best_score,
        greatest(batch.max_level, previous_totals.max_level) as max_level,
        least(batch.first_event_at, previous_totals.first_event_at) as first_event_at,
        greatest(batch.last_event_at, previous_totals.last_event_at) as last_event_at,
        if(previous_totals.purchase_count > 0 and {{ stored_purchase }} is null,
           null, greatest(batch.last_purchase_at, {{ stored_purchase }})) as last_purchase_at,
        greatest(batch.silver_loaded_at, previous_totals.silver_loaded_at) as silver_loaded_at,
        greatest(batch.silver_version, previous_totals.silver_version) as silver_version
    from batch
    left join previous_totals
        on batch.gamer_id = previous_totals.gamer_id
),
{%- else %}

merged as (
    select * from batch
),
{%- endif %}

final as (
    select
        '{{ game_slug }}' as game_slug,
        merged.*,
        current_timestamp() as updated_at
    from merged
)

select * from final
{%- endmacro %}
