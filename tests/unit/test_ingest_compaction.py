"""Compaction and upkeep: small files are bin-packed, two compactions never run at once, and
upkeep keeps the log and the folder bounded.

delta-rs 1.6.6 lets a compaction planned on a stale snapshot commit after another one rewrote
the same files, which doubles those rows; ``compact`` therefore holds a per-table lock.
"""

from __future__ import annotations

import threading
import time

import pyarrow as pa
from deltalake import DeltaTable, write_deltalake

from ingest.landing.compaction import compact, compaction_lock
from ingest.landing.upkeep import Retention, upkeep


def _small_files(path, count: int = 12) -> None:
    for i in range(count):
        batch = pa.table({"n": pa.array(range(i * 10, i * 10 + 10), pa.int64())})
        write_deltalake(str(path), batch, mode="append")


def test_compaction_compacts_small_files(tmp_path):
    _small_files(tmp_path)
    assert compact(tmp_path) == {"numFilesAdded": 1, "numFilesRemoved": 12}
    assert sorted(DeltaTable(str(tmp_path)).to_pyarrow_table()["n"].to_pylist()) == list(range(120))


def test_a_second_compaction_while_one_runs_is_skipped_and_no_row_doubles(tmp_path):
    _small_files(tmp_path)
    original = DeltaTable.optimize.fget  # type: ignore[attr-defined]

    def slow_optimize(self):  # the first compaction holds the lock for a while
        time.sleep(1.0)
        return original(self)

    results: list[dict] = []
    try:
        DeltaTable.optimize = property(slow_optimize)  # type: ignore[method-assign, assignment]
        threads = [threading.Thread(target=lambda: results.append(compact(tmp_path))) for _ in range(2)]
        for thread in threads:
            thread.start()
            time.sleep(0.2)
        for thread in threads:
            thread.join(timeout=30)
    finally:
        DeltaTable.optimize = property(original)  # type: ignore[method-assign, assignment]
    assert sorted(results, key=str) == [
        {"numFilesAdded": 1, "numFilesRemoved": 12},
        {"skipped": "another compaction of this table is running"},
    ]
    assert sorted(DeltaTable(str(tmp_path)).to_pyarrow_table()["n"].to_pylist()) == list(range(120))


def test_the_lock_is_released_and_can_be_waited_for(tmp_path):
    _small_files(tmp_path, 2)
    with compaction_lock(tmp_path) as first:
        assert first
        with compaction_lock(tmp_path) as second:
            assert not second
    with compaction_lock(tmp_path, wait=True) as again:
        assert again


# -- upkeep: the log and the folder stay bounded -------------------------------------------
def test_upkeep_bounds_the_log_and_vacuums_what_compaction_replaced(tmp_path):
    _small_files(tmp_path, 30)
    result = upkeep(tmp_path, Retention(log_hours=0, vacuum_hours=0))
    assert result["numFilesRemoved"] == 30 and result["files_vacuumed"] == 30, result
    assert result["log_files_removed"] >= 30, result
    log = sorted(p.name for p in (tmp_path / "_delta_log").glob("0*"))
    assert len(log) <= 3, log  # the checkpoint and what came after it
    assert len(list(tmp_path.glob("*.parquet"))) == 1
    table = DeltaTable(str(tmp_path))
    assert table.metadata().configuration["delta.logRetentionDuration"] == "interval 0 hours"
    write_deltalake(str(tmp_path), pa.table({"n": pa.array([999], pa.int64())}), mode="append")
    rows = sorted(DeltaTable(str(tmp_path)).to_pyarrow_table()["n"].to_pylist())
    assert rows == [*range(300), 999]


def test_upkeep_keeps_log_and_files_younger_than_the_retention(tmp_path):
    _small_files(tmp_path, 5)
    result = upkeep(tmp_path, Retention(log_hours=48, vacuum_hours=168))
    assert result["log_files_removed"] == 0 and result["files_vacuumed"] == 0, result
    assert len(list(tmp_path.glob("*.parquet"))) == 6  # the 5 replaced files wait for the retention
    assert sorted(DeltaTable(str(tmp_path)).to_pyarrow_table()["n"].to_pylist()) == list(range(50))
