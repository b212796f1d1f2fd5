{#- Quarantined rows that silver would take today, loaded into their game's silver table.

    dbt run-operation gamelake_readmit_quarantine --args '{game: space_raiders, dry_run: true}'

    A rule relaxed (gamelake_expectations, a var such as gamelake_max_future_minutes) or a game
    made active or given an earlier launch_date in the seed leaves rows in silver_quarantine
    that would pass now; silver's mark is past them, so no build reads them again. This reads
    their full rows from bronze by Kafka coordinates (quarantine_id), judges them with today's
    seed and rules, inserts those that pass and that silver does not hold yet (by event_id, as
    a build deduplicates), and records readmitted_at and readmitted_to on their quarantine rows.
    Re-running it changes nothing: the insert skips event_ids silver holds, and the marks are
    set once. A crash between the insert and the marks is finished by the next run. It takes
    the build lock, so no dbt build runs meanwhile. Gold takes the new rows at its next build
    (silver's change data feed). Rows that still fail stay quarantined, untouched. -#}
{% macro gamelake_readmit_quarantine(game=none, dry_run=false) %}
    {%- if not execute -%}
        {{ return('') }}
    {%- endif -%}
    {%- set games = _gamelake_readmit_games(game) -%}
    {%- set quarantine = ref('silver_quarantine') -%}
    {%- if not gamelake_relation_exists(quarantine) or 'readmitted_at' not in
            adapter.get_columns_in_relation(quarantine) | map(attribute='name') | list -%}
        {{ exceptions.raise_compiler_error(
            "gamelake_readmit_quarantine: " ~ quarantine ~ " does not exist yet or predates "
            ~ "re-admission (no readmitted_at column): run `dbt build` once, then re-admit.") }}
    {%- endif -%}
    {%- do gamelake_acquire_build_lock(for_operation=true) -%}
    {%- for slug in games -%}
        {%- do _gamelake_readmit_game(slug, dry_run) -%}
    {%- endfor -%}
    {%- do gamelake_release_build_lock(for_operation=true) -%}
{% endmacro %}

{#- The active games to look at: one named game, which must be active, or all active games. -#}
{% macro _gamelake_readmit_games(game) %}
    {%- set active = run_query("select game_slug from " ~ ref('games') ~ " where is_active")
        .columns[0].values() | list -%}
    {%- if game is none -%}
        {{ return(active) }}
    {%- endif -%}
    {{- assert_game_slug(game) -}}
    {%- if game not in active -%}
        {{ exceptions.raise_compiler_error(
            "gamelake_readmit_quarantine: game '" ~ game ~ "' is not an active game of seeds/games.csv. "
            ~ "Add it or set is_active, run `ingest games sync` and `dbt build`, then re-admit.") }}
    {%- endif -%}
    {{ return([game]) }}
{% endmacro %}

{% macro _gamelake_readmit_game(slug, dry_run) %}
    {%- set silver = ref('silver_' ~ slug) -%}
    {%- if not gamelake_relation_exists(silver) -%}
        {{ log("re-admit " ~ slug ~ ": " ~ silver ~ " is not built yet; its first build reads all of "
            ~ "bronze, quarantined rows included", info=true) }}
        {{ return('') }}
    {%- endif -%}
    {%- set passing = _gamelake_readmittable(slug) -%}
    {%- set found = run_query("select count(*) from (" ~ passing ~ ") as passing")[0][0] -%}
    {%- set new = run_query(
        "select count(distinct passing.event_id) from (" ~ passing ~ ") as passing left anti join "
        ~ silver ~ " as loaded on passing.event_id = loaded.event_id")[0][0] -%}
    {{ log("re-admit " ~ slug ~ ": " ~ found ~ " quarantined rows pass today's rules, " ~ new
        ~ " new events for " ~ silver ~ (" (dry run: nothing written)" if dry_run else ""), info=true) }}
    {%- if dry_run or found == 0 -%}
        {{ return('') }}
    {%- endif -%}
    {%- do run_query(_gamelake_readmit_insert(silver, passing, slug)) -%}
    {%- do run_query(
        "merge into " ~ ref('silver_quarantine') ~ " as quarantined using (" ~ passing ~ ") as passing "
        ~ "on quarantined.quarantine_id = passing.quarantine_id and quarantined.readmitted_at is null "
        ~ "when matched then update set readmitted_at = current_timestamp(), readmitted_to = '"
        ~ silver.identifier ~ "'") -%}
{% endmacro %}

{#- silver's insert: the first landed copy of each event_id that silver does not hold, through
    the guard silver's build writes through (a rule relaxed to warn stops it, writing nothing). -#}
{% macro _gamelake_readmit_insert(silver, passing, slug) %}
insert into {{ silver }} by name
select * from (
    select first_landed.* except (quarantine_id, game_launch_date), current_timestamp() as silver_loaded_at
    from (
        select min_by(struct(*), struct(ingested_at, kafka_partition, kafka_offset)) as first_landed
        from ({{ passing }}) as passing
        group by event_id
    ) as deduplicated
    left anti join {{ silver }} as loaded
        on deduplicated.first_landed.event_id = loaded.event_id
) as readmitted
where {{ gamelake_silver_row_guard(slug) }}
{% endmacro %}

{#- The game's quarantined rows, not re-admitted yet, that pass today's seed and drop rules,
    as full staging rows with their warn rules, quarantine_id and bronze_version. -#}
{% macro _gamelake_readmittable(slug) %}
    {%- set source_relation = source('bronze', 'game_events') -%}
    {%- set sql -%}
    select
        staged.*,
        quarantined.quarantine_id,
        quarantined.bronze_version,
        games.launch_date as game_launch_date
    from ({{ stage_bronze_events(source_relation) }}) as staged
    inner join {{ ref('silver_quarantine') }} as quarantined
        on staged.bronze_row_key = quarantined.quarantine_id
    inner join {{ ref('games') }} as games
        on staged.game_slug = games.game_slug
    where
        quarantined.readmitted_at is null
        and quarantined.game_slug = '{{ slug }}'
        and games.is_active
    {%- endset -%}
    {{ return(
        "select candidates.*, " ~ failed_expectations(gamelake_expectations('warn')) ~ " as dq_warnings "
        ~ "from (" ~ sql ~ ") as candidates "
        ~ "where size(" ~ failed_expectations(gamelake_expectations('drop')) ~ ") = 0") }}
{% endmacro %}
