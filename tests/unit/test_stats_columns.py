"""Which columns of the refresh's tables keep Delta's file statistics (ingest/ops/stats_columns.py),
and that dbt creates the tables with the same ones the upkeep sets."""

from __future__ import annotations

import re

import yaml

from ingest.core.settings.paths import PROJECT_DIR
from ingest.ops.refresh_selection import SLICE
from ingest.ops.stats_columns import DAILY_ACTIVE, PLAYER_AGG, SILVER, STATS_COLUMNS, stats_columns

PLAYER_AGG_HELD = [
    "game_slug", "gamer_id", "event_count", "first_event_at", "last_event_at", "last_purchase_at",
]  # fmt: skip


def test_each_kind_of_table_keeps_statistics_on_the_columns_its_readers_skip_by() -> None:
    silver = ["event_id", "gamer_id", "event_at", "event_date", "bronze_version", "score"]
    assert stats_columns("silver.silver_space_raiders", silver) == "event_at,gamer_id,bronze_version"
    assert stats_columns("silver.silver_quarantine", silver) == "event_at,gamer_id,bronze_version"
    assert stats_columns("gold.gold_space_raiders_player_agg", PLAYER_AGG_HELD) == (
        "gamer_id,first_event_at,last_event_at,last_purchase_at"
    )
    assert (
        stats_columns("gold.gold_space_raiders_daily_active", ["event_date", "active_players"])
        == "event_date"
    )
    assert stats_columns(SLICE, ["game_slug", "bronze_version"]) == "bronze_version"


def test_a_column_the_table_lacks_is_left_out_and_a_table_of_no_known_kind_gets_none() -> None:
    # a player_agg built before last_purchase_at: Delta refuses a statistics column it lacks
    older = [name for name in PLAYER_AGG_HELD if name != "last_purchase_at"]
    assert (
        stats_columns("gold.gold_kart_legends_player_agg", older) == "gamer_id,first_event_at,last_event_at"
    )
    assert stats_columns("gold.gold_kart_legends_daily_active", ["active_players"]) is None
    assert stats_columns("gold.gold_all_games_player_agg_view", PLAYER_AGG_HELD) is None
    assert stats_columns("silver.gamelake_build_lock", ["event_at"]) is None
    assert stats_columns("reference.games", ["gamer_id"]) is None


def test_dbt_creates_silver_and_gold_with_the_statistics_columns_the_upkeep_sets() -> None:
    project = yaml.safe_load((PROJECT_DIR / "dbt_project.yml").read_text())["models"]["gamelake"]
    assert project["silver"]["+tblproperties"][STATS_COLUMNS] == ",".join(SILVER)
    macros = PROJECT_DIR / "macros" / "medallion"
    for macro, columns in (("gold_player_agg.sql", PLAYER_AGG), ("gold_daily_active.sql", DAILY_ACTIVE)):
        text = " ".join((macros / macro).read_text().split())
        called = re.search(r"gamelake_gold_table_properties\(\s*\[([^\]]*)\]\s*\)", text)
        assert called is not None, macro
        assert [name.strip(" '") for name in called.group(1).split(",")] == list(columns), macro
    properties = (PROJECT_DIR / "macros" / "project" / "stats_columns.sql").read_text()
    assert f"'{STATS_COLUMNS}': columns | join(',')" in properties
