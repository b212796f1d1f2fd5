"""dbt unit tests of the per-game macros, generated into the yml for the seed's first game only.

The macros are the same for every game, so testing one game's models tests them all; GAME in
the templates becomes that game's slug.
"""

from __future__ import annotations


def silver_unit_tests(slug: str | None) -> str:
    return UNIT_TESTS_SILVER.replace("GAME", slug) if slug else ""


def gold_unit_tests(slug: str | None) -> str:
    """None: gold reads silver's change feed (table_changes), which a unit test's inputs cannot
    stand in for; tests/integration/test_dbt_project.py checks gold exactly on every build."""
    return UNIT_TESTS_GOLD.replace("GAME", slug) if slug and UNIT_TESTS_GOLD else ""


UNIT_TESTS_SILVER = """
unit_tests:
  - name: silver_dedup_keeps_first_landing_and_skips_loaded_events
    description: >
      Retries (same event_id) collapse to the first landed copy; an event_id silver already
      holds is not inserted again; other games, rows breaking a drop rule and rows of bronze
      versions up to the mark (4) stay out.
    model: silver_GAME
    overrides:
      macros: {is_incremental: true}
      # the bounds a build reads from the Delta log, pinned: the test is about the batch
      vars: {gamelake_pinned_read_plan: {use_slice: true, mark: 4, to: 9}}
    given:
      - input: ref('games')
        rows:
          - {game_slug: GAME, is_active: true}
          - {game_slug: other_game, is_active: true}
      - input: source('bronze', 'game_events')
        rows: []
      - input: ref('stg_bronze__new_events')
        rows:
          - {event_id: e1, game_slug: GAME, gamer_id: g1, event_type: session_start,
             event_date: "2024-05-01", event_at: "2024-05-01 10:00:00",
             kafka_topic: t, kafka_partition: 0, kafka_offset: 10, ingested_at: "2024-05-01 10:00:05",
             bronze_version: 5}
          - {event_id: e1, game_slug: GAME, gamer_id: g1, event_type: session_start,
             event_date: "2024-05-01", event_at: "2024-05-01 10:00:00",
             kafka_topic: t, kafka_partition: 1, kafka_offset: 3, ingested_at: "2024-05-01 10:00:09",
             bronze_version: 6}
          - {event_id: e2, game_slug: GAME, gamer_id: g1, event_type: match_start,
             event_date: "2024-05-01", event_at: "2024-05-01 10:01:00",
             kafka_topic: t, kafka_partition: 0, kafka_offset: 11, ingested_at: "2024-05-01 10:01:05",
             bronze_version: 5}
          - {event_id: e3, game_slug: GAME, gamer_id: g2, event_type: purchase,
             event_date: "2024-05-01", event_at: "2024-05-01 10:02:00",
             kafka_topic: t, kafka_partition: 0, kafka_offset: 12, ingested_at: "2024-05-01 10:02:05",
             bronze_version: 5}
          - {event_id: e4, game_slug: other_game, gamer_id: g2, event_type: purchase,
             event_date: "2024-05-01", event_at: "2024-05-01 10:02:00",
             kafka_topic: t, kafka_partition: 0, kafka_offset: 13,
             ingested_at: "2024-05-01 10:02:05", bronze_version: 5}
          - {event_id: e5, game_slug: GAME, gamer_id: "", event_type: purchase,
             event_date: "2024-05-01", event_at: "2024-05-01 10:02:00",
             kafka_topic: t, kafka_partition: 0, kafka_offset: 14, ingested_at: "2024-05-01 10:02:05",
             bronze_version: 5}
          - {event_id: e6, game_slug: GAME, gamer_id: g3, event_type: purchase,
             event_date: "2024-05-01", event_at: "2024-05-01 09:00:00",
             kafka_topic: t, kafka_partition: 0, kafka_offset: 9, ingested_at: "2024-05-01 09:00:05",
             bronze_version: 4}
      - input: this
        format: sql
        rows: |
          select 'e2' as event_id, date '2024-05-01' as event_date
    expect:
      rows:
        - {event_id: e1, kafka_partition: 0, kafka_offset: 10}
        - {event_id: e3, kafka_partition: 0, kafka_offset: 12}
"""

UNIT_TESTS_GOLD = ""
