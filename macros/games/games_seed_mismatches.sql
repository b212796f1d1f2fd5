{#- Rows where seeds/games.csv (as seeded) and the generated per-game models
    disagree: a game without its models, models without a game, a game whose
    model set is incomplete, or a games list (gamelake_games) that is stale.
    Empty when they agree. Used by data-tests/assert_games_seed_matches_models. -#}
{% macro games_seed_mismatches(models_per_game=3) %}
    {%- set model_counts = {} -%}
    {%- if execute -%}
        {%- for node in graph.nodes.values() if node.resource_type == 'model' -%}
            {%- set game_slug = node.config.meta.get('game_slug') -%}
            {%- if game_slug -%}
                {%- do model_counts.update({game_slug: model_counts.get(game_slug, 0) + 1}) -%}
            {%- endif -%}
        {%- endfor -%}
    {%- endif -%}
    {%- set seeded = gamelake_games() -%}
    {%- set generated_slugs = (model_counts.keys() | list) + seeded -%}
with games as (
    select * from {{ ref('games') }}
),

generated as (
    select
        cast(null as string) as game_slug,
        0 as model_count,
        false as in_seed
    where false
    {%- for game_slug in generated_slugs | unique %}
    union all
    select
        '{{ game_slug }}' as game_slug,
        {{ model_counts.get(game_slug, 0) }} as model_count,
        {{ 'true' if game_slug in seeded else 'false' }} as in_seed
    {%- endfor %}
),

compared as (
    select
        coalesce(games.game_slug, generated.game_slug) as game_slug,
        case
            when generated.game_slug is null
                then 'is in seeds/games.csv but has no generated models'
            when games.game_slug is null
                then 'has generated models but is not in seeds/games.csv'
            when generated.model_count != {{ models_per_game }}
                then concat('has ', generated.model_count, ' of {{ models_per_game }} generated models')
            when not generated.in_seed
                then 'is missing from the generated games list macros/games/gamelake_games.sql'
        end as problem
    from games
    full outer join generated
        on games.game_slug = generated.game_slug
),

final as (
    select
        game_slug,
        concat('game ', coalesce(game_slug, '<null>'), ' ', problem, ': run `ingest games sync`') as problem
    from compared
    where problem is not null
)

select * from final
{%- endmacro %}
