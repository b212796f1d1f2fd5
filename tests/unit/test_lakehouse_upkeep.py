"""What the refresh's upkeep of silver and gold finds due, read from a Delta log with delta-rs,
and how its settings are checked. The upkeep against real Spark + Delta, in a running refresh:
tests/integration/test_refresh_upkeep.py."""

from __future__ import annotations

import os
import subprocess
import sys
from datetime import date
from pathlib import Path

import pyarrow as pa
import pytest
from deltalake import DeltaTable, write_deltalake

from ingest.core.errors import ConfigError
from ingest.ops.lakehouse_upkeep import (
    SMALL_BYTES,
    UpkeepPolicy,
    compactions_per_cycle,
    due_compaction,
    game_tables,
    vacuum,
)


def _append(path: Path, day: date, rows: int = 3, partitioned: bool = True) -> None:
    table = pa.table({"event_id": [f"e{i}" for i in range(rows)], "event_date": [day] * rows})
    write_deltalake(str(path), table, mode="append", partition_by=["event_date"] if partitioned else None)


def test_a_partition_is_due_once_it_holds_the_set_number_of_small_files(tmp_path: Path) -> None:
    for _ in range(3):
        _append(tmp_path, date(2026, 11, 27))
    _append(tmp_path, date(2026, 11, 26))
    assert due_compaction("silver.silver_x", DeltaTable(str(tmp_path)), compact_files=4) is None
    _append(tmp_path, date(2026, 11, 27))
    due = due_compaction("silver.silver_x", DeltaTable(str(tmp_path)), compact_files=4)
    assert due is not None
    assert (due.table, due.dates, due.small_files) == ("silver.silver_x", ("2026-11-27",), 4)


def test_an_unpartitioned_table_is_due_as_a_whole(tmp_path: Path) -> None:
    for _ in range(2):
        _append(tmp_path, date(2026, 11, 27), partitioned=False)
    due = due_compaction("gold.gold_x_player_agg", DeltaTable(str(tmp_path)), compact_files=2)
    assert due is not None and due.dates == () and due.small_files == 2


def test_compactions_per_cycle_keep_up_with_tables_that_each_gain_a_file_a_cycle() -> None:
    # 60 games' silver and gold: every table due once per 30 cycles, at most 7 a cycle
    assert compactions_per_cycle(181, UpkeepPolicy(compact_files=30)) == 7
    assert compactions_per_cycle(4, UpkeepPolicy(compact_files=30)) == 1


def test_vacuum_deletes_replaced_files_and_commits_nothing_when_none_expired(tmp_path: Path) -> None:
    _append(tmp_path, date(2026, 11, 27))
    assert vacuum(DeltaTable(str(tmp_path)), hours=0) == 0
    assert DeltaTable(str(tmp_path)).version() == 0, "a vacuum with nothing to delete committed"
    write_deltalake(
        str(tmp_path), pa.table({"event_id": ["e"], "event_date": [date(2026, 11, 27)]}), mode="overwrite"
    )
    assert vacuum(DeltaTable(str(tmp_path)), hours=1) == 0, (
        "a file replaced just now is kept for the retention"
    )
    assert vacuum(DeltaTable(str(tmp_path)), hours=0) == 1
    assert DeltaTable(str(tmp_path)).to_pyarrow_table().num_rows == 1


def test_a_games_tables_are_its_silver_and_its_gold() -> None:
    assert game_tables("kart_legends") == [
        "silver.silver_kart_legends",
        "gold.gold_kart_legends_player_agg",
        "gold.gold_kart_legends_daily_active",
    ]


def test_a_slug_unsafe_in_sql_never_becomes_a_table_name() -> None:
    with pytest.raises(ConfigError, match=r"reference.games: game_slug 'x; drop table y'"):
        game_tables("x; drop table y")


@pytest.mark.parametrize(
    ("flag", "value", "message"),
    [
        ("--vacuum-hours", "-1", "--vacuum-hours -1: give a number of hours, 0 or more"),
        ("--log-hours", "0", "--log-hours 0: give a number of hours, 1 or more"),
        ("--compact-files", "-3", "--compact-files -3: give a number of files, or 0 for no compaction"),
        (
            "--checkpoint-commits",
            "-1",
            "--checkpoint-commits -1: give a number of commits, or 0 to leave checkpoints to Spark",
        ),
    ],
)
def test_a_negative_upkeep_setting_is_refused_before_spark_starts(
    flag: str, value: str, message: str
) -> None:
    done = subprocess.run(
        [sys.executable, "-m", "ingest.cli", "refresh", "--continuous", flag, value],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode != 0
    assert message in done.stderr


def test_a_file_of_small_bytes_or_more_is_left_out_of_a_compaction(tmp_path: Path) -> None:
    # a day's packed file just below half the target was rewritten whole at every compaction
    day = date(2026, 11, 27)
    rows = SMALL_BYTES // 32 + 1  # random 32-byte values do not compress
    big = pa.table({"event_id": [os.urandom(16).hex() for _ in range(rows)], "event_date": [day] * rows})
    write_deltalake(str(tmp_path), big, mode="append", partition_by=["event_date"])
    sizes = pa.table(DeltaTable(str(tmp_path)).get_add_actions(flatten=True)).column("size_bytes").to_pylist()
    assert sizes[0] >= SMALL_BYTES
    for _ in range(2):
        _append(tmp_path, day)

    due = due_compaction("silver.silver_x", DeltaTable(str(tmp_path)), compact_files=2)
    assert due is not None and due.small_files == 2
    assert due_compaction("silver.silver_x", DeltaTable(str(tmp_path)), compact_files=3) is None
