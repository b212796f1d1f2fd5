"""Small-file handling for the ingest tables: compaction (OPTIMIZE), checkpoints, vacuum.

The service compacts bronze every ``compact_every_commits`` commits; ``python -m ingest.maintenance``
does all three for bronze, dead letters and the event log. Compaction commits do not move
offsets; a concurrent ingest commit simply re-checks its offsets and retries (see writer.py).
"""

from __future__ import annotations

import sys
from pathlib import Path

from deltalake import DeltaTable

from ingest.settings import load_settings


def compact(path: Path) -> dict[str, object]:
    table = DeltaTable(str(path))
    result = table.optimize.compact()
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
