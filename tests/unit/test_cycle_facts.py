"""What the refresh hands a cycle's games build: gold's marks read from gold's files with
delta-rs for the games built, and the slice's facts from its one look at the slice; only under
the build lock, and cleared when the build is over."""

from __future__ import annotations

import json
from datetime import UTC, date, datetime
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest
from deltalake import write_deltalake

from ingest.ops.bronze_watch import VERSIONS_CONF
from ingest.ops.cycle_facts import (
    DAILY_ACTIVE_BATCHES_CONF,
    GOLD_MARKS_CONF,
    GOLD_VERSIONS_CONF,
    HANDED_CONFS,
    NONE_HANDED,
    SLICE_FACTS_CONF,
    handing_cycle_facts,
)
from ingest.ops.gold_marks import gold_readers, handed_marks
from ingest.ops.refresh_selection import ANY_GAME, SliceReaders
from tests.unit.conf_session import ConfSession

BOUNDS = [10, 14, "2026-11-27 15:00:00", '{"silver_alpha": 10, "silver_beta": 12, "silver_quarantine": 10}']
# the slice: alpha has rows after its mark on two dates; beta's rows are ones it has read
READERS = SliceReaders(
    {"silver_alpha": 10, "silver_beta": 12, "silver_quarantine": 10},
    {ANY_GAME: 14, "alpha": 14, "beta": 12},
    ["alpha", "beta"],
    bounds=BOUNDS,
    dates={"alpha": {"2026-11-25": 9, "2026-11-26": 11, "2026-11-27": 14}, "beta": {"2026-11-27": 12}},
    event_times={
        "alpha": {
            9: ("2026-11-25 08:00:00.000000", "2026-11-27 09:00:00.000000"),  # read: widens nothing
            11: ("2026-11-26 23:59:59.250000", "2026-11-27 10:00:00.000000"),
            14: ("2026-11-27 09:30:00.000000", "2026-11-27 10:00:00.500000"),
        },
        "beta": {12: ("2026-11-27 11:00:00.000000", "2026-11-27 11:05:00.000000")},
    },
)


def _paid(rows: int) -> dict[str, pa.Array]:
    """player_agg's times: every player's last event on 2026-11-27, no purchase."""
    last_event_at = [datetime(2026, 11, 27, 10, tzinfo=UTC)] * rows
    return {
        "last_event_at": pa.array(last_event_at, pa.timestamp("us", "UTC")),
        "last_purchase_at": pa.array([None] * rows, pa.timestamp("us", "UTC")),
    }


def _silver(tables: Path, day: str, slug: str = "alpha") -> None:
    rows = pa.table({"event_date": pa.array([date.fromisoformat(day)]), "gamer_id": ["g1"]})
    write_deltalake(
        str(tables / "silver.db" / f"silver_{slug}"), rows, mode="append", partition_by=["event_date"]
    )


def _silver_up_to(tables: Path, slug: str, version: int) -> None:
    """Silver versions 0 to ``version``, which gold's marks read up to."""
    for _ in range(version + 1):
        _silver(tables, "2026-11-20", slug)


def _gold(tables: Path, name: str, columns: dict[str, list[Any]]) -> None:
    write_deltalake(str(tables / "gold.db" / name), pa.table(columns), mode="append")


@pytest.fixture
def tables(tmp_path: Path) -> Path:
    _gold(tmp_path, "gold_alpha_player_agg", {"gamer_id": ["g1", "g2"], "silver_version": [3, 7], **_paid(2)})
    _gold(tmp_path, "gold_alpha_player_agg", {"gamer_id": ["g3"], "silver_version": [7], **_paid(1)})
    _gold(tmp_path, "gold_alpha_daily_active", {"event_date": ["2026-11-27"], "silver_version": [6]})
    _gold(tmp_path, "gold_beta_player_agg", {"gamer_id": ["g1"], "silver_version": [9]})  # not built now
    _gold(tmp_path, "gold_gamma_player_agg", {"gamer_id": ["g1"]})  # built before gold kept a mark
    # built before player_agg kept last_purchase_at, which daily_active reads: asks Spark
    _gold(tmp_path, "gold_delta_player_agg", {"gamer_id": ["g1"], "silver_version": [5]})
    _gold(tmp_path, "gold_delta_daily_active", {"event_date": ["2026-11-27"], "silver_version": [5]})
    _silver_up_to(tmp_path, "delta", 5)
    return tmp_path


def test_each_built_gold_table_of_the_games_hands_its_largest_silver_version(tables: Path) -> None:
    _silver_up_to(tables, "alpha", 7)
    golds = [gold for slug in ["alpha", "gamma", "delta", "epsilon"] for gold in gold_readers(tables, slug)]
    assert handed_marks(golds) == {
        "gold.gold_alpha_player_agg": 7,
        "gold.gold_alpha_daily_active": 6,
        "gold.gold_delta_daily_active": 5,
    }


def test_the_slice_facts_name_each_games_dates_after_its_planned_mark() -> None:
    assert json.loads(READERS.handed()) == {
        "bounds": BOUNDS,
        "active": ["alpha", "beta"],
        "dates": {
            "alpha": {
                "mark": 10,
                "dates": ["2026-11-26", "2026-11-27"],
                "event_at": ["2026-11-26 23:59:59.250000", "2026-11-27 10:00:00.500000"],
            },
            "beta": {"mark": 12, "dates": [], "event_at": None},
        },
    }


def test_facts_are_handed_under_the_lock_and_cleared_after(tables: Path) -> None:
    _silver_up_to(tables, "alpha", 7)
    spark = ConfSession()
    with handing_cycle_facts(spark, tables, READERS, lock_held=True):
        handed = spark.handed(GOLD_MARKS_CONF)
        assert handed == {"gold.gold_alpha_player_agg": 7, "gold.gold_alpha_daily_active": 6}
        assert spark.handed(SLICE_FACTS_CONF)["bounds"] == BOUNDS
        # the versions the marks were read at: daily_active reads player_agg there
        assert spark.handed(GOLD_VERSIONS_CONF) == {
            "gold.gold_alpha_player_agg": 1,
            "gold.gold_alpha_daily_active": 0,
        }
    assert spark.conf.values == dict.fromkeys(HANDED_CONFS, NONE_HANDED)


def test_daily_active_is_handed_its_batch_and_again_for_a_gold_step_of_its_own(tables: Path) -> None:
    # daily_active's mark is silver version 6: silver's commits 7 and 8 are its batch
    for day in ["2026-11-20"] * 7 + ["2026-11-28"]:
        _silver(tables, day)  # versions 0-7
    spark = ConfSession()
    spark.conf.set(VERSIONS_CONF, json.dumps({"silver.silver_alpha": 7}))
    with handing_cycle_facts(spark, tables, READERS, lock_held=True) as hand_gold_step:
        assert spark.handed(DAILY_ACTIVE_BATCHES_CONF) == {
            "gold.gold_alpha_daily_active": {
                "silver_to": 7,
                "dates": ["2026-11-28"],
                "last_rows": 7,
                "players_through": "2026-11-27",
            }
        }
        _silver(tables, "2026-11-26")  # the cycle's silver step commits version 8: a late day
        spark.conf.set(VERSIONS_CONF, json.dumps({"silver.silver_alpha": 8}))  # before the gold step
        hand_gold_step()
        assert spark.handed(DAILY_ACTIVE_BATCHES_CONF)["gold.gold_alpha_daily_active"]["dates"] == [
            "2026-11-26",
            "2026-11-28",
        ]
    assert spark.conf.values[DAILY_ACTIVE_BATCHES_CONF] == NONE_HANDED


def test_without_the_lock_nothing_is_handed_and_models_ask_spark(tables: Path) -> None:
    spark = ConfSession()
    with handing_cycle_facts(spark, tables, READERS, lock_held=False):
        assert all(spark.handed(conf) == {} for conf in HANDED_CONFS)


def test_a_failed_build_leaves_no_facts_behind(tables: Path) -> None:
    spark = ConfSession()
    with pytest.raises(RuntimeError), handing_cycle_facts(spark, tables, READERS, lock_held=True):
        raise RuntimeError("dbt failed")
    assert spark.conf.values == dict.fromkeys(HANDED_CONFS, NONE_HANDED)
