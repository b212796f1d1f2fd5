{#- Daily active players of one game, by event_date. Its three counts of events add up across
    builds; its two distinct counts (active_players, paying_players) do not. A build adds to
    them the players it can show are new to a day, from player_agg as it stood before this
    cycle's build (read at the version `ingest refresh` handed over, when that table had read
    silver exactly as far as this one: equal marks):
      - a player unknown there, or whose stored last event (last purchase) falls on an earlier
        day, is new to the day: + 1;
      - one whose stored last event falls on the day was counted already: + 0.
    That holds on every day where none of the batch's players is late (stored last event on a
    later day), which is every day on or after player_agg's latest stored day. A day where one
    is, counted there or not, is recounted from silver's partition for the day. `ingest refresh`
    hands each build its batch's days, player_agg's latest day, and the batch days before it
    where a batch player is late, judged player by player (ingest/ops/daily_active_batches.py),
    so the statement names the days it adds and the days it recounts, with no query of its own:
    one player whose clock runs ahead does not make every batch of today a recount. A batch
    with no late player reads the batch and player_agg and no partition of silver, which grows
    all day. A build not handed them (one from a shell, an unknown commit) recounts every day of its
    batch. Without a mark, all days are counted from a pinned snapshot. Days are UTC, as silver's
    event_date (bronze's date of event_at).
    Each day's change is added to the stored day and the table (a row a day) is rewritten whole
    in one statement (insert_overwrite, macros/project/lean_incremental.sql), as player_agg is: a
    MERGE spent half its time finding the files its keys touch, in a table of one small file
    (bench/results/gold_merge.md, "Inside one daily-active write"). -#}
{% macro gold_daily_active(game_slug) %}
    {{- assert_game_slug(game_slug) -}}
    {{- config(incremental_strategy='insert_overwrite',
        tblproperties=gamelake_gold_table_properties(['event_date'])) -}}
    {%- set silver = ref('silver_' ~ game_slug) -%}
    {%- set plan = gamelake_silver_read_plan(silver) -%}
    {%- set key = gamelake_gold_key('event_date', 'gold_' ~ game_slug ~ '_daily_active') -%}
    {%- if gamelake_nothing_unread(plan) %}
{{ gamelake_unchanged_marker() }}
    {%- endif %}
    {%- if plan.mark is none %}
{{ _daily_active_counted(silver, plan, key, game_slug) }}
    {%- else %}
    {%- set player_state = _player_state(game_slug, plan) %}
    {%- set days = _foreseen_days(silver, plan, player_state) %}
    {%- if days is none %}
{{ _daily_active_recounted(silver, plan, key, game_slug) }}
    {%- else %}
{{ _daily_active_added(silver, plan, key, game_slug, player_state, days) }}
    {%- endif %}
    {%- endif %}
{%- endmacro %}


{#- Every day counted from silver at version plan.to; a stored day is handed the change to it. -#}
{% macro _daily_active_counted(silver, plan, key, game_slug) %}
with counted_days as (
    select
        event_date,
        {{ gamelake_day_counts() }},
        max(silver_loaded_at) as silver_loaded_at
    from {{ silver }}{% if execute %} version as of {{ plan.to }}{% endif %}
    group by event_date
),

changed as (
    {{- _changes_to_stored('counted_days') }}
),
{{ _daily_active_final(key, game_slug, 'changed', 'cast(' ~ plan.to ~ ' as bigint) as silver_version', plan) }}
{%- endmacro %}


{#- Every day of the batch recounted from silver's partition for the day. Each day's
    silver_version is the latest silver version that brought it rows: the table's mark is then
    the largest silver version read, as player_agg's is, so the two marks agree when both have
    read the same rows. -#}
{% macro _daily_active_recounted(silver, plan, key, game_slug) %}
with new_events as (
    {{- gamelake_unread_silver(silver, plan) }}
),

batch_days as (
    select
        event_date,
        max(silver_version) as silver_version
    from new_events
    group by event_date
),

recounted_days as (
    {#- the semi-join prunes silver's partitions at run time (dynamic partition pruning) #}
    select
        event_date,
        {{ gamelake_day_counts() }},
        max(silver_loaded_at) as silver_loaded_at
    from {{ silver }} version as of {{ plan.to }}
    where event_date in (select batch_days.event_date from batch_days)
    group by event_date
),

recounted_changes as (
    {{- _changes_to_stored('recounted_days') }}
),

changed as (
    select
        recounted_changes.*,
        batch_days.silver_version
    from recounted_changes
    inner join batch_days
        on recounted_changes.event_date = batch_days.event_date
),
{{ _daily_active_final(key, game_slug, 'changed', 'silver_version', plan) }}
{%- endmacro %}


{#- The batch's days as `days` foresees them (_foreseen_days): added to the stored counts on
    and after days.through, recounted from silver's partition before it. -#}
{% macro _daily_active_added(silver, plan, key, game_slug, player_state, days) %}
with
{%- if days.adds %}
new_events as (
    select * from ({{ gamelake_unread_silver(silver, plan) }})
    {%- if days.late %}
    where event_date not in (date '{{ days.late | join("', date '") }}')
    {%- endif %}
),

batch_players as (
    select
        event_date,
        gamer_id,
        count(*) as event_count,
        count_if(event_type = 'session_start') as session_count,
        count_if(event_type = 'match_start') as match_count,
        count_if(event_type = 'purchase') > 0 as purchased,
        max(silver_loaded_at) as silver_loaded_at,
        max(silver_version) as silver_version
    from new_events
    group by event_date, gamer_id
),

known_players as (
    select
        gamer_id,
        purchase_count,
        last_event_at,
        last_purchase_at
    from {{ player_state.relation }} version as of {{ player_state.version }}
),

classified as (
    select
        batch_players.*,
        case
            when known_players.gamer_id is null then 1
            {{ _new_to_day('known_players.last_event_at') }}
        end as new_active,
        case
            when not batch_players.purchased then 0
            when coalesce(known_players.purchase_count, 0) = 0 then 1
            {{ _new_to_day('known_players.last_purchase_at') }}
        end as new_paying
    from batch_players
    left join known_players
        on batch_players.gamer_id = known_players.gamer_id
),

batch_days as (
    select
        event_date,
        sum(event_count) as event_count,
        sum(session_count) as session_count,
        sum(match_count) as match_count,
        sum(new_active) as new_active,
        sum(new_paying) as new_paying,
        count_if(new_active is null or new_paying is null) = 0 as additive,
        max(silver_loaded_at) as silver_loaded_at,
        max(silver_version) as silver_version
    from classified
    group by event_date
),

added as (
    {#- changes to the stored days, which _daily_active_final adds them to. A late player on a
        day foreseen without one is a broken fact, never a silently skipped day. #}
    select
        event_date,
        new_active as active_players,
        new_paying as paying_players,
        session_count,
        match_count,
        event_count,
        silver_loaded_at,
        silver_version
    from batch_days
    where assert_true(
        batch_days.additive,
        '{{ this.identifier }}: a batch day needs a recount that `ingest refresh` did not foresee; run `dbt build --select {{ this.identifier }}` from a shell, which recounts it'
    ) is null
),
{%- endif %}
{%- if days.late %}

recounted_days as (
    select
        event_date,
        {{ gamelake_day_counts() }},
        max(silver_loaded_at) as silver_loaded_at
    from {{ silver }} version as of {{ plan.to }}
    where event_date in (date '{{ days.late | join("', date '") }}')
    group by event_date
),

recounted_changes as (
    {{- _changes_to_stored('recounted_days') }}
),

recounted as (
    select
        *,
        cast({{ days.last_rows }} as bigint) as silver_version
    from recounted_changes
),
{%- endif %}

changed as (
    {%- if days.adds %}
    select * from added
    {%- endif %}
    {%- if days.adds and days.late %}
    union all
    {%- endif %}
    {%- if days.late %}
    select * from recounted
    {%- endif %}
),
{{ _daily_active_final(key, game_slug, 'changed', 'silver_version', plan) }}
{%- endmacro %}


{#- The table's rows: each day of `changed` (the changes to a stored day: counts added,
    silver_loaded_at the later, silver_version and updated_at the change's) combined with the
    stored days, which a day the batch does not touch keeps as they are; `silver_version` is the
    select item of that column. A table built before its mark has no silver_version to keep
    (plan.columns, none when the refresh handed the mark over: then the table has it). -#}
{% macro _daily_active_final(key, game_slug, changed, silver_version, plan) %}
{%- if is_incremental() %}
{%- set stored_mark = 'stored_days.silver_version'
    if plan.columns is none or 'silver_version' in plan.columns else 'cast(null as bigint)' %}
changes as (
    select
        {{ key }} as event_date,
        {{ _day_counts() | join(',\n        ') }},
        silver_loaded_at,
        {{ silver_version }}
    from {{ changed }}
),

final as (
    select
        coalesce(changes.event_date, stored_days.event_date) as event_date,
        '{{ game_slug }}' as game_slug,
        {%- for count in _day_counts() %}
        coalesce(stored_days.{{ count }}, 0) + coalesce(changes.{{ count }}, 0) as {{ count }},
        {%- endfor %}
        greatest(changes.silver_loaded_at, stored_days.silver_loaded_at) as silver_loaded_at,
        if(changes.event_date is null, {{ stored_mark }}, changes.silver_version) as silver_version,
        if(changes.event_date is null, stored_days.updated_at, current_timestamp()) as updated_at
    from changes
    full outer join {{ this }} as stored_days
        on changes.event_date = stored_days.event_date
)
{%- else %}
final as (
    select
        {{ key }} as event_date,
        '{{ game_slug }}' as game_slug,
        {{ _day_counts() | join(',\n        ') }},
        silver_loaded_at,
        {{ silver_version }},
        current_timestamp() as updated_at
    from {{ changed }}
)
{%- endif %}

select * from final
{%- endmacro %}


{#- The cases of a known batch player: new to the batch row's day (1) when its stored `last_at`
    falls before the day, counted (0) when on it. Otherwise null: after the day (a late event),
    or not stored. -#}
{% macro _new_to_day(last_at) %}
    {{- return("when " ~ _utc_date(last_at) ~ " < batch_players.event_date then 1"
        ~ " when " ~ _utc_date(last_at) ~ " = batch_players.event_date then 0") -}}
{% endmacro %}

{#- The UTC date of a timestamp whatever the session's time zone, as event_date is. -#}
{% macro _utc_date(at) %}
    {{- return("date_from_unix_date(cast(floor(unix_micros(" ~ at ~ ") / 86400000000) as int))") -}}
{% endmacro %}


{#- player_agg of the game as it stood before this cycle, when it has read silver exactly as far
    as this table (equal handed marks): {'relation', 'version'}; none otherwise. -#}
{% macro _player_state(game_slug, plan) %}
    {%- set name = this.schema ~ '.gold_' ~ game_slug ~ '_player_agg' -%}
    {%- set marks = _handed_conf('spark.gamelake.gold_marks') -%}
    {%- set versions = _handed_conf('spark.gamelake.gold_versions') -%}
    {%- if name not in versions or marks.get(name) != plan.mark -%}
        {{ return(none) }}
    {%- endif -%}
    {{ return({'relation': this.incorporate(path={'identifier': 'gold_' ~ game_slug ~ '_player_agg'}),
               'version': versions[name] | int}) }}
{% endmacro %}


{#- The days of this build's batch as `ingest refresh` handed them over for the silver version
    the batch ends at (ingest/ops/daily_active_batches.py), with player_agg's latest day before
    the cycle: {'through': that day, 'late': the batch days to recount (handed, judged player by
    player; else every batch day before `through`), 'adds': whether to read the batch for the
    other days, 'last_rows': the last silver version that brought rows}. When this invocation
    built silver after they were read, its insert's days are the ones that build recorded, judged
    by `through` alone. None when not known. -#}
{% macro _foreseen_days(silver, plan, player_state) %}
    {%- set handed = _handed_conf('spark.gamelake.daily_active_batches')
        .get(this.schema ~ '.' ~ this.identifier) -%}
    {%- if player_state is none or handed is none -%}
        {{ return(none) }}
    {%- endif -%}
    {%- set dates = handed['dates'] | list -%}
    {%- set recorded_dates = [] -%}
    {%- set last_rows = handed['last_rows'] -%}
    {%- if plan.to == handed['silver_to'] + 1 -%}
        {%- set recorded = _recorded_batch(silver) -%}
        {%- if recorded is none -%}
            {{ return(none) }}
        {%- endif -%}
        {%- set recorded_dates = recorded.dates | list -%}
        {%- set last_rows = plan.to if recorded_dates else last_rows -%}
    {%- elif plan.to != handed['silver_to'] -%}
        {{ return(none) }}
    {%- endif -%}
    {%- set through = handed['players_through'] -%}
    {%- set judged = handed.get('late') -%}
    {%- set late = (dates | select('lt', through) | list if judged is none else judged | list)
        + recorded_dates | select('lt', through) | list -%}
    {%- set late = late | unique | sort | list -%}
    {%- set dates = dates + recorded_dates -%}
    {{ return({'through': through, 'late': late, 'last_rows': last_rows,
               'adds': dates | reject('in', late) | list | length > 0 or not late}) }}
{% endmacro %}


{#- A day's counts over silver rows grouped by event_date: what daily_active stores, and what its
    audit recounts (daily_active_drift.sql). In the order of _day_counts. -#}
{% macro gamelake_day_counts() %}
    {{- return("count(distinct gamer_id) as active_players,
        count(distinct if(event_type = 'purchase', gamer_id, null)) as paying_players,
        count_if(event_type = 'session_start') as session_count,
        count_if(event_type = 'match_start') as match_count,
        count(*) as event_count") -}}
{% endmacro %}

{% macro _day_counts() %}
    {{- return(['active_players', 'paying_players', 'session_count', 'match_count', 'event_count']) -}}
{% endmacro %}

{#- The days of `counted` (event_date, the counts, silver_loaded_at) as changes to the stored
    days, which _daily_active_final adds back: their counts less the stored ones. A first build
    has none. -#}
{% macro _changes_to_stored(counted) %}
    {%- if not is_incremental() %}
    select * from {{ counted }}
    {%- else %}
    select
        {{ counted }}.event_date,
        {%- for count in _day_counts() %}
        {{ counted }}.{{ count }} - coalesce(stored_days.{{ count }}, 0) as {{ count }},
        {%- endfor %}
        {{ counted }}.silver_loaded_at
    from {{ counted }}
    left join {{ this }} as stored_days
        on {{ counted }}.event_date = stored_days.event_date
    {%- endif %}
{% endmacro %}
