{#- Bronze rows that silver will not take, with the reasons: rows breaking a drop
    expectation, and rows of a game that is not in the games seed. Shared by all
    games; incremental by the same high-water mark and lookback as silver. -#}
{% macro quarantine_events() %}
with stg_bronze__game_events as (
    select * from {{ ref('stg_bronze__game_events') }}
),

games as (
    select * from {{ ref('games') }}
),

batch as (
    select
        stg_bronze__game_events.*,
        games.game_slug is not null as is_known_game
    from stg_bronze__game_events
    left join games
        on stg_bronze__game_events.game_slug = games.game_slug
    {%- if is_incremental() %}
    where stg_bronze__game_events.ingested_at
        > {{ high_water_mark('ingested_at', var('gamelake_lookback_minutes')) }}
    {%- endif %}
),

judged as (
    select
        batch.*,
        concat(
            if(is_known_game, cast(array() as array<string>), array('unknown_game')),
            {{ failed_expectations(gamelake_expectations('drop')) }}
        ) as reasons
    from batch
),

rejected as (
    select
        bronze_row_key as quarantine_id,
        reasons,
        game_slug,
        event_id,
        gamer_id,
        event_type,
        event_at,
        event_date,
        kafka_topic,
        kafka_partition,
        kafka_offset,
        schema_id,
        ingested_at
    from judged
    where size(reasons) > 0
),

new_rejects as (
    select rejected.*
    from rejected
    {%- if is_incremental() %}
    left anti join {{ this }} as landed
        on rejected.quarantine_id = landed.quarantine_id
    {%- endif %}
),

final as (
    select
        new_rejects.*,
        current_timestamp() as quarantined_at
    from new_rejects
)

select * from final
{%- endmacro %}
