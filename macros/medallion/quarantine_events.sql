{#- Bronze rows that silver will not take, with the reasons: rows breaking a drop
    expectation, and rows of a game that is not in the games seed. Shared by all games;
    reads the bronze rows it has not read, as silver does (gamelake_bronze_read_plan). A
    re-read after a crash finds its rows here already: the anti-join looks only at rows of
    bronze versions after the mark, which Delta's file statistics narrow to the last builds. -#}
{% macro quarantine_events() %}
    {%- set plan = gamelake_bronze_read_plan() -%}
with unread_bronze as (
    {{- gamelake_unread_bronze(plan) }}
),

games as (
    select * from {{ ref('games') }}
),

batch as (
    select
        unread_bronze.*,
        games.launch_date as game_launch_date,
        games.game_slug is not null as is_known_game
    from unread_bronze
    left join games
        on unread_bronze.game_slug = games.game_slug
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
        message_type,
        ingested_at,
        bronze_version
    from judged
    where size(reasons) > 0
),

new_rejects as (
    select rejected.*
    from rejected
    {%- if is_incremental() %}
    left anti join (
        select landed.quarantine_id
        from {{ this }} as landed
        {%- if plan.use_slice %}
        where landed.bronze_version > {{ plan.mark }}
        {%- endif %}
    ) as landed
        on rejected.quarantine_id = landed.quarantine_id
    {%- endif %}
),

final as (
    select
        new_rejects.*,
        current_timestamp() as quarantined_at,
        -- set by gamelake_readmit_quarantine when the row passes after a rule or seed change
        cast(null as timestamp) as readmitted_at,
        cast(null as string) as readmitted_to
    from new_rejects
)

select * from final
{%- endmacro %}
