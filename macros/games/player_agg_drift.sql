{#- For every game: gamers whose gold_<game>_player_agg row differs from the
    same aggregate recomputed over all of silver_<game>. Empty when exact. -#}
{% macro player_agg_drift() %}
    {%- if gamelake_games() | length == 0 %}
select
    cast(null as string) as game_slug,
    cast(null as string) as gamer_id
where false
    {%- endif %}
    {%- for game_slug in gamelake_games() %}
    {{- assert_game_slug(game_slug) }}
    {%- if not loop.first %}
union all
    {% endif %}
select
    '{{ game_slug }}' as game_slug,
    coalesce(recomputed.gamer_id, previous_totals.gamer_id) as gamer_id
from (
    select
        gamer_id,
        count(*) as event_count,
        count_if(event_type = 'session_start') as session_count,
        count_if(event_type = 'purchase') as purchase_count,
        max(score) as best_score,
        min(event_at) as first_event_at,
        max(event_at) as last_event_at,
        max(if(event_type = 'purchase', event_at, null)) as last_purchase_at
    from {{ ref('silver_' ~ game_slug) }}
    group by gamer_id
) as recomputed
full outer join {{ ref('gold_' ~ game_slug ~ '_player_agg') }} as previous_totals
    on recomputed.gamer_id = previous_totals.gamer_id
where
    not (recomputed.event_count <=> previous_totals.event_count)
    or not (recomputed.session_count <=> previous_totals.session_count)
    or not (recomputed.purchase_count <=> previous_totals.purchase_count)
    or not (recomputed.best_score <=> previous_totals.best_score)
    or not (recomputed.first_event_at <=> previous_totals.first_event_at)
    or not (recomputed.last_event_at <=> previous_totals.last_event_at)
    or not (recomputed.last_purchase_at <=> previous_totals.last_purchase_at)
    {%- endfor %}
{%- endmacro %}
