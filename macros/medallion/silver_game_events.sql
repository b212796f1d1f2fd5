{#- One game's silver table: its bronze rows this table has not read (gamelake_bronze_read_plan:
    the shared slice after its mark, or a pinned snapshot on a first build or catch-up),
    expectations applied, deduplicated on event_id within the batch and against what silver
    holds. A retry of an event carries the same event time, so the anti-join reads only the
    event_date partitions of the batch, and in them the files whose event times can overlap the
    batch's, both named as literals so Delta prunes and skips the rest: today's partition grows
    all day, the files a build reads do not. -#}
{% macro silver_game_events(game_slug) %}
    {{- assert_game_slug(game_slug) -}}
    {%- set drop_rules = gamelake_expectations('drop') -%}
    {%- set fail_rules = gamelake_expectations('fail') -%}
    {%- set plan = gamelake_bronze_read_plan() -%}
with unread_bronze as (
    {{- gamelake_unread_bronze(plan, "game_slug = '" ~ game_slug ~ "'") }}
),

games as (
    select * from {{ ref('games') }}
),

batch as (
    select
        unread_bronze.*,
        games.launch_date as game_launch_date
    from unread_bronze
    inner join games
        on unread_bronze.game_slug = games.game_slug
    where games.is_active
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
    -- the anti-join sorts and merges, never broadcasts: Spark sizes silver's side from its
    -- files scaled to two of its columns (a backfill's week of rows passes for a few MB) and
    -- would build all of it as one hash table in the driver; a sort-merge join spills instead
    select {% if is_incremental() %}/*+ merge(loaded) */ {% endif %}deduplicated.first_landed.*
    from deduplicated
    {%- if is_incremental() %}
    left anti join (
        select
            loaded.event_id,
            loaded.event_date
        from {{ this }} as loaded
        where {{ _loaded_partitions(plan, game_slug) }}
    ) as loaded
        on
            deduplicated.first_landed.event_id = loaded.event_id
            and deduplicated.first_landed.event_date = loaded.event_date
    {%- endif %}
),

final as (
    select
        new_events.* except (game_launch_date),
        current_timestamp() as silver_loaded_at
    from new_events
    where {{ gamelake_silver_row_guard(game_slug) }}
)

select * from final
{%- endmacro %}

{#- The predicate on the silver rows that can be this batch's events again: in the event_date
    partitions of the slice's new rows of this game, between their earliest and latest event
    times, as literals; or every row when the batch is a snapshot (a catch-up, which rereads
    history once). -#}
{% macro _loaded_partitions(plan, game_slug) %}
    {%- if not (execute and plan.use_slice) or var('gamelake_pinned_read_plan', none) is not none
        or not gamelake_relation_exists(ref('stg_bronze__new_events')) -%}
        {{ return('true') }}
    {%- endif -%}
    {%- set handed = _handed_slice_facts().get('dates', {}).get(game_slug) -%}
    {%- if handed is not none and handed['mark'] == plan.mark -%}
        {%- set dates = handed['dates'] -%}  {#- read once for every game by `ingest refresh` -#}
        {%- set event_at = handed.get('event_at') -%}
    {%- else -%}
        {%- set span = gamelake_batch_span(ref('stg_bronze__new_events'),
            "game_slug = '" ~ game_slug ~ "' and bronze_version > " ~ plan.mark) -%}
        {%- set dates = span.dates -%}
        {%- set event_at = span.event_at -%}
    {%- endif -%}
    {%- do _record_batch(this, dates, event_at) -%}
    {{ return(gamelake_batch_rows(dates, event_at, 'loaded.')) }}
{% endmacro %}

{#- The rows of a silver table that can share an event with a batch of `dates` and event times
    `event_at` ([earliest, latest], or none when unknown): a retry carries its event's time, so
    it lies in the batch's partitions and between its times. As literals: Delta prunes the other
    partitions and skips the files whose event_at statistics fall outside. -#}
{% macro gamelake_batch_rows(dates, event_at, alias='') %}
    {%- if dates | length == 0 -%}
        {{ return('false') }}
    {%- endif -%}
    {%- set in_dates = alias ~ "event_date in (date '" ~ dates | join("', date '") ~ "')" -%}
    {%- if event_at is none -%}
        {{ return(in_dates) }}
    {%- endif -%}
    {{ return(in_dates ~ " and " ~ alias ~ "event_at between timestamp '" ~ event_at[0]
        ~ "' and timestamp '" ~ event_at[1] ~ "'") }}
{% endmacro %}

{#- The event dates of the rows of `source` that `where` selects, and their earliest and latest
    event times (none when no row has one), in one query: what gamelake_batch_rows takes. -#}
{% macro gamelake_batch_span(source, where) %}
    {%- set found = run_query(
        "select cast(event_date as string), " ~ _event_time('min') ~ ", " ~ _event_time('max')
        ~ " from " ~ source ~ " where " ~ where ~ " and event_date is not null group by event_date") -%}
    {%- set firsts = found.columns[1].values() | reject('none') | list -%}
    {%- set lasts = found.columns[2].values() | reject('none') | list -%}
    {{ return({'dates': found.columns[0].values() | list,
               'event_at': [firsts | min, lasts | max] if firsts else none}) }}
{% endmacro %}

{#- An event time rendered as a timestamp literal takes it back (ingest/ops/refresh_selection.py's
    _TIME): zero-padded, so the strings also order as the times do. -#}
{% macro _event_time(aggregate) %}
    {{- return("date_format(" ~ aggregate ~ "(event_at), 'yyyy-MM-dd HH:mm:ss.SSSSSS')") -}}
{% endmacro %}

{#- The event dates this build's batch of `relation` can write to, and its event times, for the
    silver check later in the same invocation (_recorded_batch in
    macros/project/get_where_subquery.sql), which would otherwise ask the table's history and
    change feed: two Spark jobs a game. Stamped with the invocation: every build takes the build
    lock, so no other writer commits to the table between this build's insert and its check.
    As `invocation:date,date[/earliest/latest]`, the times with a T for the space SET would split at.
    In the session's conf; on more than one dbt thread, where the check may run on another
    thread's session (ingest/ops/thread_sessions.py, or the cluster's Thrift sessions), also in a
    global temporary view. Without it, the check asked the history and change feed of each table
    another thread built. -#}
{% macro _record_batch(relation, dates, event_at) %}
    {%- set times = '/' ~ event_at | join('/') | replace(' ', 'T') if event_at else '' -%}
    {%- set recorded = invocation_id ~ ":" ~ dates | join(',') ~ times -%}
    {%- do run_query("set " ~ _batch_dates_conf(relation) ~ " = " ~ recorded) -%}
    {%- if target.threads > 1 -%}
        {%- do run_query("create or replace global temporary view " ~ _batch_view(relation)
            ~ " as select '" ~ recorded ~ "' as recorded") -%}
    {%- endif -%}
{% endmacro %}

{% macro _batch_dates_conf(relation) %}
    {{ return('spark.gamelake.batch_dates.' ~ relation.schema ~ '.' ~ relation.identifier) }}
{% endmacro %}

{#- The global temporary view a build on more than one thread records its batch of `relation` in
    as well: every session of the Spark application sees it (_recorded_batch). -#}
{% macro _batch_view(relation) %}
    {{ return('gamelake_batch__' ~ relation.schema ~ '__' ~ relation.identifier) }}
{% endmacro %}
