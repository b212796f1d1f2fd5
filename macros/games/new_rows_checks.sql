{#- The checks that hold for every game's table, run once over the rows of all games rather than
    as one dbt test per game and column: a test node costs about half a second on its own, so
    per-game tests made the build grow with the number of games, not with the data.
    Each returned row is a failure: the game, the check and the offending value.

    Silver: the rows of each game's latest build (in the event_date partitions its latest insert
    wrote to, between its earliest and latest event times, macros/project/get_where_subquery.sql):
    event_id unique and not null, gamer_id not null, event_type one of the contract's, game_slug
    in the seed. A retry shares its event's time, so uniqueness among those rows is uniqueness of
    the new rows against all.
    Gold: the whole per-game tables, which hold a row per player or per day: player_agg's
    gamer_id and daily_active's event_date unique and not null, game_slug in the seed.
    Either covers the games whose tables the invocation builds (_checked_games). -#}
{% macro silver_new_rows_failures() %}
{%- set checked = _checked_games('silver_') %}
with
{% for game_slug in checked -%}
{{ assert_game_slug(game_slug) }}new_rows_{{ game_slug }} as (
    select
        '{{ game_slug }}' as model_game,
        event_id,
        gamer_id,
        event_type,
        game_slug
    from {{ ref('silver_' ~ game_slug) }}
    where {{ _gamelake_latest_build_partitions(ref('silver_' ~ game_slug)) }}
),

{% endfor -%}
new_rows as (
    {%- for game_slug in checked %}
    select * from new_rows_{{ game_slug }}
    {%- if not loop.last %}
    union all
    {%- endif %}
    {%- endfor %}
),

games as (
    select game_slug from {{ ref('games') }}
),

failures as (
    select
        model_game,
        'event_id is unique' as failed_check,
        event_id as failed_value
    from new_rows
    group by model_game, event_id
    having count(*) > 1
    union all
    select
        new_rows.model_game,
        case
            when new_rows.event_id is null then 'event_id is not null'
            when new_rows.gamer_id is null then 'gamer_id is not null'
            when new_rows.event_type is null
                or new_rows.event_type not in ('{{ gamelake_event_types() | join("', '") }}')
                then 'event_type is a known event type'
            else 'game_slug is in the games seed'
        end as failed_check,
        coalesce(new_rows.event_id, new_rows.event_type, new_rows.game_slug) as failed_value
    from new_rows
    left anti join games
        on new_rows.game_slug = games.game_slug
            and new_rows.event_id is not null
            and new_rows.gamer_id is not null
            and new_rows.event_type in ('{{ gamelake_event_types() | join("', '") }}')
)

select * from failures
{%- endmacro %}

{% macro gold_rows_failures() %}
{%- set checked = _checked_games('gold_', '_player_agg') %}
with
{% for game_slug in checked -%}
{{ assert_game_slug(game_slug) }}keys_{{ game_slug }} as (
    select
        '{{ game_slug }}' as model_game,
        'player_agg' as gold_table,
        gamer_id as row_key,
        game_slug
    from {{ ref('gold_' ~ game_slug ~ '_player_agg') }}
    union all
    select
        '{{ game_slug }}' as model_game,
        'daily_active' as gold_table,
        cast(event_date as string) as row_key,
        game_slug
    from {{ ref('gold_' ~ game_slug ~ '_daily_active') }}
),

{% endfor -%}
gold_keys as (
    {%- for game_slug in checked %}
    select * from keys_{{ game_slug }}
    {%- if not loop.last %}
    union all
    {%- endif %}
    {%- endfor %}
),

games as (
    select game_slug from {{ ref('games') }}
),

failures as (
    select
        model_game,
        gold_table || ' key is unique' as failed_check,
        row_key as failed_value
    from gold_keys
    group by model_game, gold_table, row_key
    having count(*) > 1
    union all
    select
        gold_keys.model_game,
        case
            when gold_keys.row_key is null then gold_keys.gold_table || ' key is not null'
            else 'game_slug is in the games seed'
        end as failed_check,
        gold_keys.game_slug as failed_value
    from gold_keys
    left anti join games
        on gold_keys.game_slug = games.game_slug
            and gold_keys.row_key is not null
)

select * from failures
{%- endmacro %}


{#- The games whose `<prefix><game><suffix>` model this invocation builds: a refresh cycle builds
    only the games with new rows, and checks those. Every game when it builds none of them (`dbt
    test`), and while parsing, so the test depends on every game. -#}
{% macro _checked_games(prefix, suffix='') %}
    {%- if not execute -%}
        {{ return(gamelake_games()) }}
    {%- endif -%}
    {%- set built = [] -%}
    {%- for game_slug in gamelake_games() -%}
        {%- if 'model.gamelake.' ~ prefix ~ game_slug ~ suffix in selected_resources -%}
            {%- do built.append(game_slug) -%}
        {%- endif -%}
    {%- endfor -%}
    {{ return(built or gamelake_games()) }}
{% endmacro %}
