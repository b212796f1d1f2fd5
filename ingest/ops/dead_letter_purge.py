"""Purge old dead letters: their raw bytes may hold player data, so they are not kept forever.

Rows older than ``dead_letter_retention_days`` are deleted in one Delta commit; the parquet
files that held them are then vacuumed once ``FILE_GRACE_HOURS`` have passed since the delete
(not at once: a service batch may be writing dead-letter files that are not committed yet).
The dead-letter topic sink is not purged here: the topic's own retention governs it.
"""

from __future__ import annotations

import datetime as dt
from pathlib import Path

from deltalake.exceptions import CommitFailedError

from ingest.landing.delta.table_location import TableLocation, as_location

FILE_GRACE_HOURS = 1
_ATTEMPTS = 3


def purge(
    path: Path | TableLocation, older_than_days: int, file_grace_hours: int = FILE_GRACE_HOURS
) -> dict[str, int]:
    """Delete dead letters older than ``older_than_days`` and vacuum files past the grace period."""
    cutoff = dt.datetime.now(dt.UTC) - dt.timedelta(days=older_than_days)
    predicate = f"dead_lettered_at < '{cutoff.strftime('%Y-%m-%dT%H:%M:%S.%fZ')}'"
    table = as_location(path).delta_table()
    deleted = 0
    for _ in range(_ATTEMPTS):  # a service commit may win the race: read again and retry
        try:
            table.update_incremental()
            deleted = int(table.delete(predicate).get("num_deleted_rows", 0))
            break
        except CommitFailedError:
            continue
    removed = table.vacuum(retention_hours=file_grace_hours, dry_run=False, enforce_retention_duration=False)
    return {"deleted_rows": deleted, "removed_files": len(removed)}
