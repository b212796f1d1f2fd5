"""Small-file handling for the ingest tables: compaction (OPTIMIZE), checkpoints, vacuum.

The service compacts bronze every ``compact_every_commits`` commits; ``python -m ingest.maintenance``
does all three for bronze, dead letters and the event log. Compaction commits do not move
offsets; a concurrent ingest commit simply re-checks its offsets and retries (see writer.py).
A compaction that itself loses a race (a schema change landed) is skipped and reported, never
raised: the next one picks the files up, and the service that ran it keeps landing.

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
import sys
from collections.abc import Iterator
from pathlib import Path

from deltalake import DeltaTable
from deltalake.exceptions import CommitFailedError

from ingest.settings import load_settings


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


def maintain(path: Path, vacuum_hours: int = 168) -> dict[str, object]:
    table = DeltaTable(str(path))
    compacted = compact(path)
    table.update_incremental()
    table.create_checkpoint()
    removed = table.vacuum(retention_hours=vacuum_hours, dry_run=False, enforce_retention_duration=False)
    table.cleanup_metadata()
    return {**compacted, "vacuumed_files": len(removed), "version": table.version()}


def main() -> int:
    settings = load_settings()
    for path in (settings.bronze_path, settings.dead_letters_path, settings.event_log_path):
        if DeltaTable.is_deltatable(str(path)):
            print(f"{path}: {maintain(path)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
