"""``make compact``: compaction, checkpoints and vacuum of the landing tables, and the dead-letter purge.

Runs beside the service safely: compaction takes the table's compaction lock
(ingest/landing/compaction.py), checkpoints and vacuum add no data files.
"""

from __future__ import annotations

import sys
from pathlib import Path

from deltalake import DeltaTable

from ingest.core.errors import ConfigError
from ingest.core.settings import load_settings
from ingest.landing.compaction import compact
from ingest.ops.dead_letter_purge import purge


def maintain(path: Path, vacuum_hours: int = 168) -> dict[str, object]:
    table = DeltaTable(str(path))
    compacted = compact(path)
    table.update_incremental()
    table.create_checkpoint()
    removed = table.vacuum(retention_hours=vacuum_hours, dry_run=False, enforce_retention_duration=False)
    table.cleanup_metadata()
    return {**compacted, "vacuumed_files": len(removed), "version": table.version()}


def main() -> int:
    try:
        settings = load_settings()
    except ConfigError as err:
        print(f"make compact: error: {err}", file=sys.stderr)
        return 2
    dead_letters = settings.dead_letters_path
    if settings.dead_letter_retention_days and DeltaTable.is_deltatable(str(dead_letters)):
        print(f"{dead_letters}: {purge(dead_letters, settings.dead_letter_retention_days)}")
    for path in (settings.bronze_path, dead_letters, settings.event_log_path):
        if DeltaTable.is_deltatable(str(path)):
            print(f"{path}: {maintain(path)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
