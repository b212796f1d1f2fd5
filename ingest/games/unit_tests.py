"""dbt unit tests of the per-game macros, generated into the yml for the seed's first game only.

The macros are the same for every game, so testing one game's models tests them all; GAME in
the templates becomes that game's slug.
"""

from __future__ import annotations


def silver_unit_tests(slug: str | None) -> str:
    return UNIT_TESTS_SILVER.replace("GAME", slug) if slug else ""


def gold_unit_tests(slug: str | None) -> str:
    return UNIT_TESTS_GOLD.replace("GAME", slug) if slug else ""


UNIT_TESTS_SILVER = """
unit_tests:
  - name: silver_dedup_keeps_first_landing_and_skips_loaded_events
    description: >
      Retries (same event_id) collapse to the first landed copy; an event_id silver already
      holds is not inserted again; other games and rows breaking a drop rule stay out.
    model: silver_GAME
    overrides:
      macros: {is_incremental: true}
      vars: {gamelake_lookback_minutes: 60}
    given:
      - input: ref('games')
        rows:
          - {game_slug: GAME, is_active: true}
          - {game_slug: other_game, is_active: true}
      - input: ref('stg_bronze__game_events')
        rows:
          - {event_id: e1, game_slug: GAME, gamer_id: g1, event_type: session_start,
             event_at: "2024-05-01 10:00:00",
             kafka_topic: t, kafka_partition: 0, kafka_offset: 10, ingested_at: "2024-05-01 10:00:05"}
          - {event_id: e1, game_slug: GAME, gamer_id: g1, event_type: session_start,
             event_at: "2024-05-01 10:00:00",
             kafka_topic: t, kafka_partition: 1, kafka_offset: 3, ingested_at: "2024-05-01 10:00:09"}
          - {event_id: e2, game_slug: GAME, gamer_id: g1, event_type: match_start,
             event_at: "2024-05-01 10:01:00",
             kafka_topic: t, kafka_partition: 0, kafka_offset: 11, ingested_at: "2024-05-01 10:01:05"}
          - {event_id: e3, game_slug: GAME, gamer_id: g2, event_type: purchase,
             event_at: "2024-05-01 10:02:00",
             kafka_topic: t, kafka_partition: 0, kafka_offset: 12, ingested_at: "2024-05-01 10:02:05"}
          - {event_id: e4, game_slug: other_game, gamer_id: g2, event_type: purchase,
             event_at: "2024-05-01 10:02:00", kafka_topic: t, kafka_partition: 0, kafka_offset: 13,
             ingested_at: "2024-05-01 10:02:05"}
          - {event_id: e5, game_slug: GAME, gamer_id: "", event_type: purchase,
             event_at: "2024-05-01 10:02:00",
             kafka_topic: t, kafka_partition: 0, kafka_offset: 14, ingested_at: "2024-05-01 10:02:05"}
      - input: this
        format: sql
        rows: |
          select 'e2' as event_id, timestamp '2024-05-01 10:30:00' as ingested_at
    expect:
      rows:
        - {event_id: e1, kafka_partition: 0, kafka_offset: 10}
        - {event_id: e3, kafka_partition: 0, kafka_offset: 12}

  - name: silver_reads_only_the_incremental_window
    description: >
      Only staging rows ingested after silver's high-water mark minus the lookback are read.
    model: silver_GAME
    overrides:
      macros: {is_incremental: true}
      vars: {gamelake_lookback_minutes: 60}
    given:
      - input: ref('games')
        rows:
          - {game_slug: GAME, is_active: true}
      - input: ref('stg_bronze__game_events')
        rows:
          - {event_id: old, game_slug: GAME, gamer_id: g1, event_type: level_up,
             event_at: "2024-05-01 10:00:00",
             kafka_topic: t, kafka_partition: 0, kafka_offset: 1, ingested_at: "2024-05-01 10:59:59"}
          - {event_id: late, game_slug: GAME, gamer_id: g1, event_type: level_up,
             event_at: "2024-05-01 10:00:00",
             kafka_topic: t, kafka_partition: 0, kafka_offset: 2, ingested_at: "2024-05-01 11:30:00"}
          - {event_id: new, game_slug: GAME, gamer_id: g1, event_type: level_up,
             event_at: "2024-05-01 12:10:00",
             kafka_topic: t, kafka_partition: 0, kafka_offset: 3, ingested_at: "2024-05-01 12:10:00"}
      - input: this
        format: sql
        rows: |
          select 'x' as event_id, timestamp '2024-05-01 12:00:00' as ingested_at
    expect:
      rows:
        - {event_id: late}
        - {event_id: new}
"""

UNIT_TESTS_GOLD = """
unit_tests:
  - name: gold_player_agg_merges_new_silver_rows_into_stored_aggregates
    description: >
      Only silver rows loaded after the stored high-water mark are read; counts add to the
      stored row, mins and maxes merge, new gamers get a fresh row.
    model: gold_GAME_player_agg
    overrides:
      macros: {is_incremental: true}
    given:
      - input: ref('silver_GAME')
        rows:
          - {gamer_id: g1, event_type: session_start, score: 50, level: 3, event_at: "2024-05-02 08:00:00",
             silver_loaded_at: "2024-05-02 09:00:00"}
          - {gamer_id: g1, event_type: session_end, duration_ms: 60000, event_at: "2024-05-02 08:01:00",
             silver_loaded_at: "2024-05-02 09:00:00"}
          - {gamer_id: g1, event_type: purchase, event_at: "2024-04-30 08:00:00",
             silver_loaded_at: "2024-05-01 09:00:00"}
          - {gamer_id: g2, event_type: purchase, event_at: "2024-05-02 07:00:00",
             silver_loaded_at: "2024-05-02 09:00:00"}
      - input: this
        format: sql
        rows: |
          select
              'g1' as gamer_id, 5 as event_count, 2 as session_count, 1 as match_count,
              1 as purchase_count, 0 as achievement_count, 1 as level_up_count,
              cast(1000 as bigint) as total_session_ms, cast(80 as bigint) as best_score, 2 as max_level,
              timestamp '2024-04-30 08:00:00' as first_event_at,
              timestamp '2024-05-01 08:00:00' as last_event_at,
              timestamp '2024-05-01 09:00:00' as silver_loaded_at
    expect:
      rows:
        - {gamer_id: g1, event_count: 7, session_count: 3, purchase_count: 1, total_session_ms: 61000,
           best_score: 80, max_level: 3, first_event_at: "2024-04-30 08:00:00",
           last_event_at: "2024-05-02 08:01:00"}
        - {gamer_id: g2, event_count: 1, session_count: 0, purchase_count: 1, total_session_ms: 0,
           best_score: null, max_level: null, first_event_at: "2024-05-02 07:00:00",
           last_event_at: "2024-05-02 07:00:00"}
"""
