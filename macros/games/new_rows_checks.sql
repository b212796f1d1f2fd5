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
    select distinct game_slug from {{ ref('games') }}
),

checked as (
    select
        new_rows.model_game,
        'event_id is unique' as key_check,
        new_rows.event_id as key_value,
        case
            when new_rows.event_id is null then 'event_id is not null'
            when new_rows.gamer_id is null then 'gamer_id is not null'
            when not coalesce(new_rows.event_type in ({{ _event_types_list() }}), false)
                then 'event_type is a known event type'
            when games.game_slug is null then 'game_slug is in the games seed'
        end as row_check,
        coalesce(new_rows.event_id, new_rows.event_type, new_rows.game_slug) as row_value
    from new_rows
    left join games
        on new_rows.game_slug = games.game_slug
)

{{ _failures_of('checked') }}
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
    select distinct game_slug from {{ ref('games') }}
),

checked as (
    select
        gold_keys.model_game,
        gold_keys.gold_table || ' key is unique' as key_check,
        gold_keys.row_key as key_value,
        case
            when gold_keys.row_key is null then gold_keys.gold_table || ' key is not null'
            when games.game_slug is null then 'game_slug is in the games seed'
        end as row_check,
        gold_keys.game_slug as row_value
    from gold_keys
    left join games
        on gold_keys.game_slug = games.game_slug
)

{{ _failures_of('checked') }}
{%- endmacro %}


{#- A check's failures from its `checked` rows (model_game; key_check and key_value, the key's
    uniqueness; row_check, the first rule the row breaks or null, and row_value), in one pass over
    every table: each row stands for its key and, when it breaks a rule, for its failure; a count
    of each gives the key's failure (more than one row) once and each row's failure once per row.
    Spark plans each table's scan once this way, where a group-by beside an anti join over the same
    rows listed every table's files twice (bench/results/check_passes.md). The counts are a hash
    aggregate's: a list of the failing rows per key falls back to sorting every key. -#}
{% macro _failures_of(checked) %}
select
    counted.model_game,
    counted.failed_check,
    counted.failed_value
from (
    select
        model_game,
        failure.is_key,
        failure.failed_check,
        failure.failed_value,
        count(*) as copies
    from {{ checked }}
    lateral view inline(
        array(
            named_struct('is_key', true, 'failed_check', key_check, 'failed_value', key_value),
            named_struct('is_key', false, 'failed_check', row_check, 'failed_value', row_value)
        )
    ) failure
    where failure.is_key or failure.failed_check is not null
    group by model_game, failure.is_key, failure.failed_check, failure.failed_value
) as counted
lateral view explode(
    array_repeat(true, cast(if(counted.is_key, least(counted.copies - 1, 1), counted.copies) as int))
) as one_row
{%- endmacro %}

{% macro _event_types_list() -%}
    '{{ gamelake_event_types() | join("', '") }}'
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
