{#- One relation over every game of the seed (gamelake_games(), generated
    from seeds/games.csv): union all of gold_<game>_<suffix>, with the seed's
    display name and studio, and row_key: key_columns joined with ':'. -#}
{% macro union_games(model_suffix, key_columns) %}
    {%- set games = gamelake_games() -%}
    {%- if games | length == 0 -%}
        {{ exceptions.raise_compiler_error("union_games: seeds/games.csv lists no games") }}
    {%- endif -%}
    {%- if not modules.re.fullmatch('[a-z][a-z0-9_]*', model_suffix) -%}
        {{ exceptions.raise_compiler_error("union_games: bad model suffix '" ~ model_suffix ~ "'") }}
    {%- endif -%}
with games as (
    select * from {{ ref('games') }}
),

unioned as (
    {%- for game_slug in games %}
    {{- assert_game_slug(game_slug) }}
    select * from {{ ref('gold_' ~ game_slug ~ '_' ~ model_suffix) }}
    {%- if not loop.last %}
    union all
    {%- endif %}
    {%- endfor %}
),

final as (
    select
        concat_ws(':', {{ key_columns | join(', ') }}) as row_key,
        unioned.*,
        games.display_name,
        games.studio
    from unioned
    inner join games
        on unioned.game_slug = games.game_slug
)

select * from final
{%- endmacro %}
