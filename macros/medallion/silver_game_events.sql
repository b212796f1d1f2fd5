{#- One game's silver table: its rows from staging, new since the last run
    (ingested_at high-water mark minus a lookback), expectations applied,
    deduplicated on event_id within the batch and against what silver holds. -#}
{% macro silver_game_events(game_slug) %}
    {{- assert_game_slug(game_slug) -}}
    {%- set drop_rules = gamelake_expectations('drop') -%}
    {%- set fail_rules = gamelake_expectations('fail') -%}
with stg_bronze__game_events as (
    select * from {{ ref('stg_bronze__game_events') }}
),

games as (
    select * from {{ ref('games') }}
),

batch as (
    select stg_bronze__game_events.*
    from stg_bronze__game_events
    inner join games
        on stg_bronze__game_events.game_slug = games.game_slug
    where
        games.game_slug = '{{ game_slug }}'
        and games.is_active
        {%- if is_incremental() %}
        and stg_bronze__game_events.ingested_at
            > {{ high_water_mark('ingested_at', var('gamelake_lookback_minutes')) }}
        {%- endif %}
),

checked as (
    select
        batch.*,
        {{ failed_expectations(gamelake_expectations('warn')) }} as dq_warnings
    from batch
    where
        {%- for rule in fail_rules %}
        assert_true(
            coalesce({{ rule.condition }}, false),
            'gamelake expectation {{ rule.name }} failed in silver_{{ game_slug }}'
        ) is null
        and
        {%- endfor %}
        size({{ failed_expectations(drop_rules) }}) = 0
),

deduplicated as (
    -- first landing wins: producers retry, and a retry is the same event
    select min_by(struct(*), struct(ingested_at, kafka_partition, kafka_offset)) as first_landed
    from checked
    group by event_id
),

new_events as (
    select deduplicated.first_landed.*
    from deduplicated
    {%- if is_incremental() %}
    left anti join {{ this }} as loaded
        on deduplicated.first_landed.event_id = loaded.event_id
    {%- endif %}
),

final as (
    select
        new_events.*,
        current_timestamp() as silver_loaded_at
    from new_events
)

select * from final
{%- endmacro %}
