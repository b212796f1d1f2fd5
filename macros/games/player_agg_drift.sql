{#- For every game: gamers whose gold_<game>_player_agg row differs from the
    same aggregate recomputed over all of silver_<game>. Empty when exact. -#}
{% macro player_agg_drift() %}
    {%- for game_slug in gamelake_games() %}
    {{- assert_game_slug(game_slug) }}
    {%- if not loop.first %}
union all
    {% endif %}
select
    '{{ game_slug }}' as game_slug,
    coalesce(recomputed.gamer_id, stored.gamer_id) as gamer_id
from (
    select
        gamer_id,
        count(*) as event_count,
        count_if(event_type = 'session_start') as session_count,
        count_if(event_type = 'purchase') as purchase_count,
        max(score) as best_score,
        min(event_at) as first_event_at,
        max(event_at) as last_event_at
    from {{ ref('silver_' ~ game_slug) }}
    group by gamer_id
) as recomputed
full outer join {{ ref('gold_' ~ game_slug ~ '_player_agg') }} as stored
    on recomputed.gamer_id = stored.gamer_id
where
    not (recomputed.event_count <=> stored.event_count)
    or not (recomputed.session_count <=> stored.session_count)
    or not (recomputed.purchase_count <=> stored.purchase_count)
    or not (recomputed.best_score <=> stored.best_score)
    or not (recomputed.first_event_at <=> stored.first_event_at)
    or not (recomputed.last_event_at <=> stored.last_event_at)
    {%- endfor %}
{%- endmacro %}
