"""What tells a daily_active build which days of its batch can meet a late player: the event dates
of silver's commits after its mark and the last that brought rows, from the commit files, and
player_agg's latest stored day, from its file statistics; the days before that one on which a
player of the batch is late, judged player by player; nothing for a table where either is not
known."""

from __future__ import annotations

import datetime as dt
import os
from pathlib import Path

import pyarrow as pa
import pytest
from deltalake import DeltaTable, write_deltalake

from ingest.ops.daily_active_batches import (
    daily_active_batches,
    late_days,
    players_through,
    rows_committed,
)
from ingest.ops.gold_marks import gold_readers

UTC = dt.UTC
TIMES = pa.timestamp("us", "UTC")


def _silver(tables: Path, dates: list[str]) -> None:
    rows = pa.table(
        {"event_date": pa.array([dt.date.fromisoformat(d) for d in dates]), "n": list(range(len(dates)))}
    )
    write_deltalake(
        str(tables / "silver.db" / "silver_alpha"), rows, mode="append", partition_by=["event_date"]
    )


def _players(
    tables: Path, last_event_at: list[dt.datetime], last_purchase_at: list[dt.datetime | None]
) -> None:
    rows = pa.table(
        {
            "gamer_id": [f"g{n}" for n in range(len(last_event_at))],
            "last_event_at": pa.array(last_event_at, TIMES),
            "silver_version": [0] * len(last_event_at),
            "last_purchase_at": pa.array(last_purchase_at, TIMES),
        }
    )
    write_deltalake(str(tables / "gold.db" / "gold_alpha_player_agg"), rows, mode="append")


def _daily(tables: Path, mark: int) -> None:
    rows = pa.table({"event_date": [dt.date(2026, 11, 27)], "silver_version": [mark]})
    write_deltalake(str(tables / "gold.db" / "gold_alpha_daily_active"), rows, mode="append")


@pytest.fixture
def tables(tmp_path: Path) -> Path:
    _silver(tmp_path, ["2026-11-27"])  # version 0
    _silver(tmp_path, ["2026-11-28", "2026-11-29"])  # 1
    _silver(tmp_path, ["2026-11-29"])  # 2
    _players(tmp_path, [dt.datetime(2026, 11, 28, 23, 59, 59, 999999, UTC)], [None])
    _players(
        tmp_path, [dt.datetime(2026, 11, 27, 12, tzinfo=UTC)], [dt.datetime(2026, 11, 27, 11, tzinfo=UTC)]
    )
    _daily(tmp_path, 0)
    return tmp_path


def test_the_dates_of_the_commits_after_a_mark_come_from_the_commit_files(tables: Path) -> None:
    silver = tables / "silver.db" / "silver_alpha"
    assert rows_committed(silver, 0, 2) == {"dates": ["2026-11-28", "2026-11-29"], "last_rows": 2}
    assert rows_committed(silver, 1, 2) == {"dates": ["2026-11-29"], "last_rows": 2}
    assert rows_committed(silver, 2, 2) == {"dates": [], "last_rows": None}  # nothing after the mark


def test_a_compaction_brings_no_dates_and_is_not_the_last_commit_with_rows(tables: Path) -> None:
    silver = tables / "silver.db" / "silver_alpha"
    DeltaTable(str(silver)).optimize.compact(partition_filters=[("event_date", "=", "2026-11-29")])
    compacted = DeltaTable(str(silver)).version()
    assert compacted == 3
    assert rows_committed(silver, 1, compacted) == {"dates": ["2026-11-29"], "last_rows": 2}
    assert rows_committed(silver, 2, compacted) == {"dates": [], "last_rows": None}


def test_a_cleaned_up_commit_file_leaves_the_dates_unknown(tables: Path) -> None:
    silver = tables / "silver.db" / "silver_alpha"
    os.remove(silver / "_delta_log" / f"{1:020d}.json")
    assert rows_committed(silver, 0, 2) is None
    assert rows_committed(silver, 1, 2) == {"dates": ["2026-11-29"], "last_rows": 2}


def test_the_latest_day_of_the_players_is_their_latest_utc_time_from_the_statistics(tables: Path) -> None:
    # the statistic is truncated to the millisecond: 23:59:59.999999 stays on the 28th
    assert players_through(DeltaTable(str(tables / "gold.db" / "gold_alpha_player_agg"))) == "2026-11-28"


def test_a_later_purchase_than_any_event_would_count_too(tmp_path: Path) -> None:
    _players(
        tmp_path, [dt.datetime(2026, 11, 27, 12, tzinfo=UTC)], [dt.datetime(2026, 11, 28, 1, tzinfo=UTC)]
    )
    assert players_through(DeltaTable(str(tmp_path / "gold.db" / "gold_alpha_player_agg"))) == "2026-11-28"


def test_files_without_statistics_are_read_instead(tmp_path: Path) -> None:
    rows = pa.table(
        {
            "gamer_id": ["g1", "g2"],
            "last_event_at": pa.array(
                [dt.datetime(2026, 11, 26, tzinfo=UTC), dt.datetime(2026, 11, 29, 3, tzinfo=UTC)], TIMES
            ),
            "last_purchase_at": pa.array([None, None], TIMES),
        }
    )
    place = str(tmp_path / "players")
    write_deltalake(place, rows, configuration={"delta.dataSkippingNumIndexedCols": "0"})
    assert players_through(DeltaTable(place)) == "2026-11-29"


def test_an_empty_player_agg_holds_no_day(tmp_path: Path) -> None:
    _players(tmp_path, [], [])
    assert players_through(DeltaTable(str(tmp_path / "gold.db" / "gold_alpha_player_agg"))) is None


def test_each_daily_active_table_is_handed_its_batch_and_the_players_latest_day(tables: Path) -> None:
    golds = gold_readers(tables, "alpha")
    handed = daily_active_batches(tables, golds, {"silver.silver_alpha": 2})
    assert handed == {
        "gold.gold_alpha_daily_active": {
            "silver_to": 2,
            "dates": ["2026-11-28", "2026-11-29"],
            "last_rows": 2,
            "players_through": "2026-11-28",
        }
    }
    # silver's version not handed (the build asks Spark): nothing to judge the batch by
    assert daily_active_batches(tables, golds, {}) == {}
    # no player_agg among the tables read: nothing either
    assert (
        daily_active_batches(
            tables, [g for g in golds if g.kind == "daily_active"], {"silver.silver_alpha": 2}
        )
        == {}
    )


def _batch(tables: Path, rows: list[tuple[str, str]]) -> None:
    """Rows of silver with its change feed on, as dbt's silver has it: (event_date, gamer_id)."""
    batch = pa.table(
        {
            "event_date": pa.array([dt.date.fromisoformat(day) for day, _ in rows], pa.date32()),
            "gamer_id": [gamer for _, gamer in rows],
        }
    )
    write_deltalake(
        str(tables / "silver.db" / "silver_alpha"),
        batch,
        mode="append",
        partition_by=["event_date"],
        configuration={"delta.enableChangeDataFeed": "true"},
    )


@pytest.fixture
def ahead(tmp_path: Path) -> Path:
    """player_agg with g0's clock ahead (stored last event on the 29th) and g1 last seen on the 27th,
    daily_active's mark at silver's version 0, and a batch of today (the 28th) in version 1."""
    _batch(tmp_path, [("2026-11-27", "g1")])  # version 0, read already
    _players(
        tmp_path,
        [dt.datetime(2026, 11, 29, 2, tzinfo=UTC), dt.datetime(2026, 11, 27, 12, tzinfo=UTC)],
        [None, dt.datetime(2026, 11, 27, 11, tzinfo=UTC)],
    )
    _daily(tmp_path, 0)
    _batch(tmp_path, [("2026-11-28", "g1"), ("2026-11-28", "g2"), ("2026-11-27", "g2")])  # 1
    return tmp_path


def test_one_player_ahead_of_the_clock_makes_no_day_of_the_others_late(ahead: Path) -> None:
    golds = gold_readers(ahead, "alpha")
    handed = daily_active_batches(ahead, golds, {"silver.silver_alpha": 1})
    # g0's day (the 29th) is player_agg's latest, but no player of the batch is late on its days
    assert handed["gold.gold_alpha_daily_active"] == {
        "silver_to": 1,
        "dates": ["2026-11-27", "2026-11-28"],
        "last_rows": 1,
        "players_through": "2026-11-29",
        "late": [],
    }


def test_a_day_is_late_where_a_player_of_the_batch_was_stored_on_a_later_day(ahead: Path) -> None:
    _batch(ahead, [("2026-11-28", "g0"), ("2026-11-26", "g1"), ("2026-11-27", "g1")])  # version 2
    silver = DeltaTable(str(ahead / "silver.db" / "silver_alpha"))
    players = DeltaTable(str(ahead / "gold.db" / "gold_alpha_player_agg"))
    days = ["2026-11-26", "2026-11-27", "2026-11-28"]
    # g0 (stored the 29th) on the 28th, g1 (stored the 27th) on the 26th; g1 on its own day is not
    assert late_days(silver, 1, 2, players, days) == ["2026-11-26", "2026-11-28"]
    # only the days asked about, and only the versions after the mark
    assert late_days(silver, 1, 2, players, ["2026-11-27"]) == []
    assert late_days(silver, 0, 1, players, days) == []


def test_a_purchase_stored_on_a_later_day_makes_the_day_late_too(tmp_path: Path) -> None:
    _batch(tmp_path, [("2026-11-27", "g0")])
    _players(
        tmp_path, [dt.datetime(2026, 11, 26, 12, tzinfo=UTC)], [dt.datetime(2026, 11, 28, 1, tzinfo=UTC)]
    )
    silver = DeltaTable(str(tmp_path / "silver.db" / "silver_alpha"))
    players = DeltaTable(str(tmp_path / "gold.db" / "gold_alpha_player_agg"))
    assert late_days(silver, -1, 0, players, ["2026-11-27"]) == ["2026-11-27"]


def test_a_batch_with_a_cleaned_up_commit_is_not_judged_and_the_build_recounts(ahead: Path) -> None:
    os.remove(ahead / "silver.db" / "silver_alpha" / "_delta_log" / f"{1:020d}.json")
    _batch(ahead, [("2026-11-28", "g2")])  # version 2: the table still opens
    assert daily_active_batches(ahead, gold_readers(ahead, "alpha"), {"silver.silver_alpha": 2}) == {}


def test_a_feed_that_cannot_be_read_hands_no_judgement(tables: Path) -> None:
    silver = DeltaTable(str(tables / "silver.db" / "silver_alpha"))  # no gamer_id column
    players = DeltaTable(str(tables / "gold.db" / "gold_alpha_player_agg"))
    assert late_days(silver, 0, 2, players, ["2026-11-27"]) is None
