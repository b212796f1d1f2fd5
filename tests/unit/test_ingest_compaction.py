"""Compaction and upkeep: small files are bin-packed, two compactions never run at once, and
upkeep keeps the log and the folder bounded.

delta-rs 1.6.6 lets a compaction planned on a stale snapshot commit after another one rewrote
the same files, which doubles those rows; ``compact`` therefore holds a per-table lock.
"""

from __future__ import annotations

import json
import os
import threading
import time

import pyarrow as pa
import pyarrow.parquet as pq
from deltalake import DeltaTable, write_deltalake

from ingest.landing.upkeep.compaction import FANOUT, compact, compaction_lock, due_partitions
from ingest.landing.upkeep.table_upkeep import TOMBSTONE_HOURS, Retention, upkeep


def _small_files(path, count: int = 12) -> None:
    for i in range(count):
        batch = pa.table({"n": pa.array(range(i * 10, i * 10 + 10), pa.int64())})
        write_deltalake(str(path), batch, mode="append")


def _counts(result: dict) -> dict:
    return {k: result[k] for k in ("numFilesAdded", "numFilesRemoved") if k in result} | (
        {"skipped": result["skipped"]} if "skipped" in result else {}
    )


def test_compaction_compacts_small_files(tmp_path):
    _small_files(tmp_path)
    sizes = sum(f.stat().st_size for f in tmp_path.glob("*.parquet"))
    result = compact(tmp_path)
    assert _counts(result) == {"numFilesAdded": 1, "numFilesRemoved": 12}
    assert result["bytesRewritten"] == sizes and result["partitionsCompacted"] == 1
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
    assert sorted(map(_counts, results), key=str) == [
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


# -- which partitions are due: each landed row is rewritten a bounded number of times ---------
MB = 1 << 20


def test_a_partition_is_due_once_its_new_rows_reach_a_fanout_share_of_its_largest_file():
    # The compacted file holds 400,000 rows in 4 MB; landed files hold 10,000 rows in 1 MB each.
    below = [(("a",), 4 * MB, 400_000), *[(("a",), MB, 10_000)] * (400_000 // 10_000 // FANOUT - 1)]
    assert due_partitions(below, target=100 * MB) == [], "bytes would call it due: rows do not"
    assert due_partitions([*below, (("a",), MB, 10_000)], target=100 * MB) == [("a",)]


def test_files_above_the_target_and_lone_files_never_make_a_partition_due():
    files = [(("a",), 200 * MB, 9), (("a",), MB, 9), (("b",), MB, 9), ((None,), 2 * MB, 9), ((None,), MB, 9)]
    assert due_partitions(files, target=100 * MB) == [(None,)]
    assert due_partitions([((), 10, 5), ((), 10, 5)], target=100) == [()]


def test_a_partition_with_a_file_of_unknown_rows_is_weighed_in_bytes():
    files = [(("a",), 40 * MB, None), (("a",), 9 * MB, 1_000_000)]
    assert due_partitions(files, target=100 * MB) == []
    assert due_partitions([*files, (("a",), MB, 1)], target=100 * MB) == [("a",)]


def test_the_bound_holds_over_a_long_stream_of_landings():
    """Simulated: 5,000 landings of 1,000 rows into one partition, compacted after every 10."""
    target_rows, landed, written = 1_000_000, 0, 0
    files: list[int] = []
    for landing in range(5_000):
        files.append(1_000)
        landed += 1_000
        due = due_partitions([(("d",), rows, rows) for rows in files], target=target_rows)
        if landing % 10 == 9 and due:
            under = [f for f in files if f <= target_rows]
            written += sum(under)
            files = [f for f in files if f > target_rows] + [sum(under)]
        small = sum(f for f in files if f <= target_rows) - max(files)
        assert small <= max(files) // FANOUT + 10_000, "small files beyond a quarter of the largest"
    assert written <= (FANOUT + 1) * landed, (written, landed)


def test_a_grown_partition_is_left_alone_until_enough_has_landed_beside_it(tmp_path):
    def land(rows: range, date: str | None) -> None:
        batch = pa.table({"day": pa.array([date] * len(rows), pa.string()), "n": pa.array(rows, pa.int64())})
        write_deltalake(str(tmp_path), batch, mode="append", partition_by=["day"])

    for i in range(8):
        land(range(i * 50_000, (i + 1) * 50_000), "d1")
        land(range(i, i + 1), None)
    first = compact(tmp_path)
    assert first["partitionsCompacted"] == 2 and first["numFilesRemoved"] == 16, first
    land(range(1_000_000, 1_000_010), "d1")
    assert compact(tmp_path)["partitionsCompacted"] == 0, "a tiny landing must not rewrite 400,000 rows"
    for i in range(3):
        land(range(2_000_000 + i * 50_000, 2_000_000 + (i + 1) * 50_000), "d1")
    again = compact(tmp_path)
    assert again["partitionsCompacted"] == 1 and again["numFilesRemoved"] == 5, again
    landed = [*range(400_000), *range(8), *range(1_000_000, 1_000_010), *range(2_000_000, 2_150_000)]
    assert sorted(DeltaTable(str(tmp_path)).to_pyarrow_table()["n"].to_pylist()) == sorted(landed)


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


def _checkpoint_removes(path) -> int:
    newest = sorted((path / "_delta_log").glob("*.checkpoint.parquet"))[-1]
    return pq.read_table(newest, columns=["remove"]).column("remove").drop_null().length()


def _age_removes(path, hours: float) -> None:
    """Move every commit's remove actions ``hours`` into the past, and drop the checkpoints that
    copied them, so that the next checkpoint is built from the aged commits."""
    for commit in (path / "_delta_log").glob("*.json"):
        actions = [json.loads(line) for line in commit.read_text().splitlines()]
        for action in actions:
            if "remove" in action:
                action["remove"]["deletionTimestamp"] -= int(hours * 3_600_000)
        commit.write_text("\n".join(json.dumps(a) for a in actions) + "\n")
    for checkpoint in (path / "_delta_log").glob("*checkpoint*"):
        checkpoint.unlink()


def _age_files(paths, hours: float) -> None:
    then = time.time() - hours * 3600
    for path in paths:
        os.utime(path, (then, then))


def test_tombstones_leave_the_checkpoint_after_an_hour_and_files_stay_the_vacuum_retention(tmp_path):
    """A checkpoint's tombstones are a cost of every commit, so they go after an hour; the
    replaced files themselves stay ``vacuum_hours`` from their writing (full vacuum)."""
    _small_files(tmp_path, 12)
    replaced = set(tmp_path.glob("*.parquet"))
    compact(tmp_path)
    retention = Retention(log_hours=48, vacuum_hours=24)
    upkeep(tmp_path, retention)
    assert _checkpoint_removes(tmp_path) == 12, "a fresh tombstone stays"
    assert (
        DeltaTable(str(tmp_path)).metadata().configuration["delta.deletedFileRetentionDuration"]
        == f"interval {TOMBSTONE_HOURS} hours"
    )

    _age_removes(tmp_path, hours=TOMBSTONE_HOURS + 1)
    upkeep(tmp_path, retention)
    assert _checkpoint_removes(tmp_path) == 0, "a tombstone over an hour old leaves the checkpoint"
    assert replaced <= set(tmp_path.glob("*.parquet")), "files written 0 h ago stay for 24 h"

    orphan = tmp_path / "part-00000-crashed-batch.c000.zstd.parquet"  # a batch that never committed
    pq.write_table(pa.table({"n": pa.array([-1], pa.int64())}), orphan)
    _age_files([*replaced, orphan], hours=25)
    result = upkeep(tmp_path, retention)
    assert result["files_vacuumed"] == 13, result
    assert not (replaced | {orphan}) & set(tmp_path.glob("*.parquet"))
    assert sorted(DeltaTable(str(tmp_path)).to_pyarrow_table()["n"].to_pylist()) == list(range(120))


def test_upkeep_checkpoints_before_it_compacts_so_the_log_to_replay_stays_short(tmp_path):
    _small_files(tmp_path, 12)
    before = DeltaTable(str(tmp_path)).version()
    result = upkeep(tmp_path, Retention(log_hours=48, vacuum_hours=168))
    checkpoints = {int(p.name.split(".")[0]) for p in (tmp_path / "_delta_log").glob("*.checkpoint.parquet")}
    assert checkpoints == {before, result["version"]}, (checkpoints, before, result)
