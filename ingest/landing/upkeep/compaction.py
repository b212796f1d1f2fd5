"""Compaction of a landing table (OPTIMIZE), one at a time per table, off the service's hot path.

The service compacts its landing tables every ``compact_every_commits`` commits, in a child
process that also checkpoints, cleans the log and vacuums (ingest/landing/upkeep/table_upkeep.py).
Compaction commits do not move offsets; a concurrent ingest commit simply re-checks its
offsets and retries (see bronze_writer.py). A compaction that itself loses a race (a schema
change landed) is skipped and reported, never raised: the next one picks the files up, and
the service keeps landing.

Only one compaction may run at a time. delta-rs 1.6.6's ``optimize.compact()`` does not detect a
concurrent compaction of the same files: the second one commits too (even with
``max_commit_retries=0``) and every row it rewrote is then in bronze twice. So ``compact`` holds
an exclusive lock (``_delta_log/.gamelake-compaction.lock``) and skips when another holder has
it; run any other OPTIMIZE of bronze (Spark's) under ``compaction_lock(path, wait=True)`` or
while no ingest instance runs. On a local disk the lock is a ``flock`` of that file; on S3 it is
a lease on that object (``lease.py``), which holds across hosts and is renewed before each bin.

Which partitions are compacted follows a write-amplification bound, not the calendar. delta-rs
bins every file below the target size (100 MB unless ``delta.targetFileSize`` says otherwise),
so compacting a partition rewrites its earlier compacted file too: compacting it after every
few landings rewrites the whole partition each time, and vacuum then keeps every copy for the
retention. A partition is compacted only once the rows of its newer files add up to at least
1/``FANOUT`` of the rows of its largest file under the target. Each compaction then writes at
most ``FANOUT + 1`` rows per row that landed since the last one, so over its life a row is
rewritten at most ``FANOUT + 1`` times, and a partition holds at most ``largest / FANOUT`` rows
in small files. Rows, not bytes: a file landing wrote holds a row in several times the bytes
of a compacted one (one small file per batch and date), so a byte rule would let landed files
trigger rewrites of compacted data many times their own rows.
"""

from __future__ import annotations

import contextlib
import fcntl
import json
import time
from collections import defaultdict
from collections.abc import Iterable, Iterator
from pathlib import Path

from deltalake import DeltaTable
from deltalake.exceptions import CommitFailedError

from ingest.landing import crash_points
from ingest.landing.delta.kept_table import KeptTable
from ingest.landing.delta.table_location import TableLocation, as_location
from ingest.landing.upkeep import lease
from ingest.landing.upkeep.lease import LOCK_NAME


class Held:
    """The compaction lock, held: ``still_held`` says whether it may commit again."""

    def __init__(self, lease_: lease.Lease | None = None) -> None:
        self.lease = lease_

    def still_held(self) -> bool:
        return self.lease is None or self.lease.renew()


@contextlib.contextmanager
def compaction_lock(place: Path | TableLocation, wait: bool = False) -> Iterator[Held | None]:
    """Hold the table's compaction lock; yields None (without it) when taken and not ``wait``."""
    location = as_location(place)
    if not location.is_local:
        with _s3_lock(location, wait) as held:
            yield held
        return
    with open(location.local_path / "_delta_log" / LOCK_NAME, "a") as handle:
        try:
            fcntl.flock(handle, fcntl.LOCK_EX | (0 if wait else fcntl.LOCK_NB))
        except BlockingIOError:
            yield None
            return
        try:
            yield Held()
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)


@contextlib.contextmanager
def _s3_lock(location: TableLocation, wait: bool) -> Iterator[Held | None]:
    taken = lease.acquire(location)
    while taken is None and wait:
        time.sleep(1.0)
        taken = lease.acquire(location)
    if taken is None:
        yield None
        return
    try:
        yield Held(taken)
    finally:
        taken.release()


FANOUT = 4
DEFAULT_TARGET_BYTES = 104_857_600  # delta-rs's default for delta.targetFileSize

PartitionKey = tuple[str | None, ...]
DataFile = tuple[PartitionKey, int, int | None]  # partition values, bytes, rows


def compact(place: Path | TableLocation, kept: KeptTable | None = None) -> dict[str, object]:
    """Compact each partition of the table at ``place`` that ``due_partitions`` picks; ``kept``,
    a handle on it already open, is brought forward once the lock is held rather than opened."""
    location = as_location(place)
    with compaction_lock(location) as held:
        if held is None:
            return {"skipped": "another compaction of this table is running"}
        crash_points.reach("compacting")
        if kept is None:
            kept = KeptTable(location)
        else:
            kept.table.update_incremental()
        table = kept.table
        columns = table.metadata().partition_columns
        target = int(table.metadata().configuration.get("delta.targetFileSize", DEFAULT_TARGET_BYTES))
        totals = {"numFilesAdded": 0, "numFilesRemoved": 0, "bytesRewritten": 0, "partitionsCompacted": 0}
        for key in due_partitions(data_files(table, columns), target):
            if not held.still_held():
                return {
                    **totals,
                    "skipped": "the compaction lease was taken over: stopped before the next bin",
                }
            try:
                # One bin at a time: the child's memory is one output file's, and the other core
                # stays free for landing.
                result = kept.table.optimize.compact(  # a bin may outlast the keys
                    partition_filters=_filters(columns, key), target_size=target, max_concurrent_tasks=1
                )
            except CommitFailedError as err:
                return {**totals, "skipped": f"lost a commit race: {err}"}
            totals["numFilesAdded"] += int(result["numFilesAdded"])
            totals["numFilesRemoved"] += int(result["numFilesRemoved"])
            totals["bytesRewritten"] += int(json.loads(result["filesRemoved"])["totalSize"])
            totals["partitionsCompacted"] += 1
    return dict(totals)


def data_files(table: DeltaTable, columns: list[str]) -> list[DataFile]:
    """(partition values, bytes, rows) of every file of ``table``'s current version."""
    actions = table.get_add_actions(flatten=True)
    sizes = actions.column("size_bytes").to_pylist()
    rows = actions.column("num_records").to_pylist()
    values = [actions.column(f"partition.{c}").to_pylist() for c in columns]
    keys = list(zip(*values, strict=True)) if columns else [()] * len(sizes)
    return list(zip(keys, sizes, rows, strict=True))


def due_partitions(files: Iterable[DataFile], target: int, fanout: int = FANOUT) -> list[PartitionKey]:
    """The partitions whose files below ``target`` bytes (besides the largest) hold at least
    1/``fanout`` of the largest's rows: compacting one of those writes at most ``fanout + 1``
    rows per new row. A partition with a file of unknown row count is weighed in bytes."""
    candidates: dict[PartitionKey, list[tuple[int, int | None]]] = defaultdict(list)
    for key, size, rows in files:
        if size <= target:
            candidates[key].append((size, rows))
    due = []
    for key, found in candidates.items():
        counted = all(rows is not None for _, rows in found)
        weights = [int(rows if counted and rows is not None else size) for size, rows in found]
        largest = max(weights)
        if len(weights) > 1 and (sum(weights) - largest) * fanout >= largest:
            due.append(key)
    return sorted(due, key=lambda k: tuple("" if v is None else v for v in k))


def _filters(columns: list[str], key: PartitionKey) -> list[tuple[str, str, str]] | None:
    # delta-rs selects the null partition (__HIVE_DEFAULT_PARTITION__) by the empty string.
    return [(c, "=", "" if v is None else v) for c, v in zip(columns, key, strict=True)] or None
