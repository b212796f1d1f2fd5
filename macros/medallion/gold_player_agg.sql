{#- Per gamer of one game. Incremental: the silver rows inserted after the silver version this
    table holds (gamelake_silver_read_plan) are aggregated, then combined with the stored rows
    (counts add, mins and maxes merge), and the table is rewritten whole in one statement
    (insert_overwrite, macros/project/lean_incremental.sql). A MERGE rewrote the table's one file
    too, but read it three times: once in its source, joined to the batch, and twice more in
    its own two passes, matching keys and copying rows (1.56-1.60 s against 2.01-2.35 s,
    bench/results/gold_merge.md; a cycle: bench/results/gold_write_pairs.md). A gamer the
    batch does not touch keeps its row as stored, updated_at included. Without a mark the
    totals are recomputed from silver and replace the stored rows.
    session_count counts session_start events: each session emits exactly one,
    and silver holds each event once, so it counts sessions, not events.
    last_purchase_at is what daily_active's paying_players needs to add a cycle's payers
    without reading the day (gold_daily_active.sql). A table built before it had the column
    gets it filled once, for every gamer, from silver's purchases at the version this build
    reads up to (_purchases_up_to), and every row counts as updated. -#}
{% macro gold_player_agg(game_slug) %}
    {{- assert_game_slug(game_slug) -}}
    {#- file statistics: the key, and the times daily_active_batches.py reads the maxima of -#}
    {{- config(incremental_strategy='insert_overwrite',
        tblproperties=gamelake_gold_table_properties(
        ['gamer_id', 'first_event_at', 'last_event_at', 'last_purchase_at'])) -}}
    {%- set counts = ['event_count', 'session_count', 'match_count', 'purchase_count',
                      'achievement_count', 'level_up_count', 'total_session_ms'] -%}
    {%- set plan = gamelake_silver_read_plan(ref('silver_' ~ game_slug)) -%}
    {%- set incremental = is_incremental() and plan.mark is not none -%}
    {#- the stored table predates last_purchase_at (plan.columns: none when it was handed) -#}
    {%- set backfill = incremental and plan.columns is not none and 'last_purchase_at' not in plan.columns -%}
    {%- if gamelake_nothing_unread(plan) %}
{{ gamelake_unchanged_marker() }}
    {%- endif %}
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

{%- if incremental %}
{%- if backfill %}
{{ _purchases_up_to(ref('silver_' ~ game_slug), plan) }}
{%- endif %}

stored as (
    select * from {{ this }}
),

merged as (
    select
        coalesce(batch.gamer_id, stored.gamer_id) as gamer_id,
        {%- for column in counts %}
        coalesce(batch.{{ column }}, 0) + coalesce(stored.{{ column }}, 0) as {{ column }},
        {%- endfor %}
        greatest(batch.best_score, stored.best_score) as best_score,
        greatest(batch.max_level, stored.max_level) as max_level,
        least(batch.first_event_at, stored.first_event_at) as first_event_at,
        greatest(batch.last_event_at, stored.last_event_at) as last_event_at,
        {%- if backfill %}
        purchases.last_purchase_at,
        {%- else %}
        greatest(batch.last_purchase_at, stored.last_purchase_at) as last_purchase_at,
        {%- endif %}
        greatest(batch.silver_loaded_at, stored.silver_loaded_at) as silver_loaded_at,
        greatest(batch.silver_version, stored.silver_version) as silver_version,
        {#- an untouched gamer keeps its updated_at; the backfill updates every row #}
        {{ 'true' if backfill else 'batch.gamer_id is not null' }} as touched,
        stored.updated_at as stored_updated_at
    from batch
    full outer join stored
        on batch.gamer_id = stored.gamer_id
    {%- if backfill %}
    left join purchases
        on coalesce(batch.gamer_id, stored.gamer_id) = purchases.gamer_id
    {%- endif %}
),
{%- else %}

merged as (
    select
        *,
        true as touched,
        cast(null as timestamp) as stored_updated_at
    from batch
),
{%- endif %}

final as (
    select
        '{{ game_slug }}' as game_slug,
        merged.* except (last_purchase_at, touched, stored_updated_at),
        if(merged.touched, current_timestamp(), merged.stored_updated_at) as updated_at,
        {#- after updated_at, where a table built before it appends it (on_schema_change): every
            game's table then has its columns in one order, which gold_all_games unions by #}
        merged.last_purchase_at
    from merged
)

select * from final
{%- endmacro %}



{#- Every stored gamer's last purchase from silver's purchases up to plan.to, which is what the
    table holds once this build's batch is in: for a table built before last_purchase_at. -#}
{% macro _purchases_up_to(silver, plan) %}
purchases as (
    select
        gamer_id,
        max(event_at) as last_purchase_at
    from {{ silver }} version as of {{ plan.to }}
    where event_type = 'purchase'
    group by gamer_id
),
{%- endmacro %}
