"""Compaction of a landing table (OPTIMIZE), one at a time per table, off the service's hot path.

The service compacts its landing tables every ``compact_every_commits`` commits, in a child
process that also checkpoints, cleans the log and vacuums (ingest/landing/upkeep.py).
Compaction commits do not move offsets; a concurrent ingest commit simply re-checks its
offsets and retries (see bronze_writer.py). A compaction that itself loses a race (a schema
change landed) is skipped and reported, never raised: the next one picks the files up, and
the service keeps landing.

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
import json
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

from deltalake import DeltaTable
from deltalake.exceptions import CommitFailedError

from ingest.landing import crash_points


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
        crash_points.reach("compacting")
        table = DeltaTable(str(path))
        try:
            # One bin at a time: the child's memory is one output file's, and the other core
            # stays free for landing.
            result = table.optimize.compact(max_concurrent_tasks=1)
        except CommitFailedError as err:
            return {"skipped": f"lost a commit race: {err}"}
    return {k: result.get(k) for k in ("numFilesAdded", "numFilesRemoved")}


class BackgroundUpkeep:
    """Upkeep of the landing tables every ``every`` commits of this instance (0: never), in a child.

    Off the hot path: the poll loop keeps landing while the child compacts, checkpoints, cleans
    the log and vacuums (ingest/landing/upkeep.py), and the child's memory is its own, so the
    service's RSS does not spike. Safe beside landing: compaction commits move no offsets (an
    append racing one re-checks and retries), and the lock keeps it to one compaction per table.
    A child killed mid-way leaves only uncommitted files, which a later vacuum removes.
    """

    def __init__(self, paths: list[Path], every: int, log_hours: int, vacuum_hours: int) -> None:
        self.command = [
            sys.executable,
            "-m",
            "ingest.landing.upkeep",
            str(log_hours),
            str(vacuum_hours),
            *map(str, paths),
        ]
        self.every = every
        self.running: subprocess.Popen[str] | None = None

    def after_commit(self, commits: int) -> dict[str, object] | None:
        """Start the upkeep when due and none runs; the result of one that finished, if any."""
        finished = self.reap()
        if self.every and commits % self.every == 0 and self.running is None:
            self.running = subprocess.Popen(self.command, stdout=subprocess.PIPE, text=True)
        return finished

    def reap(self, wait_s: float = 0.0) -> dict[str, object] | None:
        """The result of the running upkeep once it has ended (waiting up to ``wait_s``)."""
        if self.running is None:
            return None
        try:
            self.running.wait(timeout=wait_s) if wait_s else self.running.poll()
        except subprocess.TimeoutExpired:
            return None
        if self.running.returncode is None:
            return None
        out, _ = self.running.communicate()
        code, self.running = self.running.returncode, None
        try:
            return dict(json.loads(out.strip().splitlines()[-1]))
        except (ValueError, IndexError):
            return {"failed": f"upkeep process exited {code}"}
