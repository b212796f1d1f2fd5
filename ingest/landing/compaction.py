"""Compaction of a landing table (OPTIMIZE), one at a time per table.

The service compacts bronze every ``compact_every_commits`` commits; ``ingest.ops.maintenance``
also checkpoints and vacuums. Compaction commits do not move offsets; a concurrent ingest commit
simply re-checks its offsets and retries (see bronze_writer.py). A compaction that itself loses
a race (a schema change landed) is skipped and reported, never raised: the next one picks the
files up, and the service that ran it keeps landing.

Only one compaction may run at a time. delta-rs 1.6.6's ``optimize.compact()`` does not detect a
concurrent compaction of the same files: the second one commits too (even with
``max_commit_retries=0``) and every row it rewrote is then in bronze twice. So ``compact`` holds
an exclusive lock (``_delta_log/.gamelake-compaction.lock``) and skips when another holder has
it; run any other OPTIMIZE of bronze (Spark's) under ``compaction_lock(path, wait=True)`` or
while no ingest instance runs.
"""

from __future__ import annotations

import contextlib
import fcntl
from collections.abc import Iterator
from pathlib import Path

from deltalake import DeltaTable
from deltalake.exceptions import CommitFailedError


@contextlib.contextmanager
def compaction_lock(path: Path, wait: bool = False) -> Iterator[bool]:
    """Hold the table's compaction lock; yields False (without it) when taken and not ``wait``."""
    with open(path / "_delta_log" / ".gamelake-compaction.lock", "a") as handle:
        try:
            fcntl.flock(handle, fcntl.LOCK_EX | (0 if wait else fcntl.LOCK_NB))
        except BlockingIOError:
            yield False
            return
        try:
            yield True
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)


def compact(path: Path) -> dict[str, object]:
    with compaction_lock(path) as locked:
        if not locked:
            return {"skipped": "another compaction of this table is running"}
        table = DeltaTable(str(path))
        try:
            result = table.optimize.compact()
        except CommitFailedError as err:
            return {"skipped": f"lost a commit race: {err}"}
    return {k: result.get(k) for k in ("numFilesAdded", "numFilesRemoved")}


class CompactionSchedule:
    """Compact every ``every`` commits of this instance; 0 never."""

    def __init__(self, path: Path, every: int) -> None:
        self.path = path
        self.every = every

    def after_commit(self, commits: int) -> dict[str, object] | None:
        """Compact when this commit count is due; the result, or None when not due."""
        if self.every and commits % self.every == 0:
            return compact(self.path)
        return None
