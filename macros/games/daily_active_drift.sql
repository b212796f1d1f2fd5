{#- For every game: the days whose gold_<game>_daily_active row differs from the same counts
    recomputed over all of silver_<game>. Empty when exact: the builds add each cycle's new
    players and events to the stored days (macros/medallion/gold_daily_active.sql). -#}
{% macro daily_active_drift() %}
    {%- if gamelake_games() | length == 0 %}
select
    cast(null as string) as game_slug,
    cast(null as date) as event_date
where false
    {%- endif %}
    {%- for game_slug in gamelake_games() %}
    {{- assert_game_slug(game_slug) }}
    {%- if not loop.first %}
union all
    {% endif %}
select
    '{{ game_slug }}' as game_slug,
    coalesce(recomputed.event_date, stored_days.event_date) as event_date
from (
    select
        event_date,
        {{ gamelake_day_counts() }}
    from {{ ref('silver_' ~ game_slug) }}
    group by event_date
) as recomputed
full outer join {{ ref('gold_' ~ game_slug ~ '_daily_active') }} as stored_days
    on recomputed.event_date = stored_days.event_date
where
    not (recomputed.active_players <=> stored_days.active_players)
    or not (recomputed.paying_players <=> stored_days.paying_players)
    or not (recomputed.session_count <=> stored_days.session_count)
    or not (recomputed.match_count <=> stored_days.match_count)
    or not (recomputed.event_count <=> stored_days.event_count)
    {%- endfor %}
{%- endmacro %}
