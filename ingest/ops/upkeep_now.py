"""``make compact``: the dead-letter purge, then upkeep of the landing tables now.

The service does the same upkeep every ``compact_every_commits`` commits, in a child process.

Runs beside the service safely: see ingest/landing/upkeep/table_upkeep.py.
"""

from __future__ import annotations

import sys

from deltalake import DeltaTable

from ingest.core.errors import ConfigError
from ingest.core.settings.ingest_settings import load_settings
from ingest.landing.upkeep.table_upkeep import Retention, upkeep
from ingest.ops.dead_letter_purge import purge


def main() -> int:
    try:
        settings = load_settings()
    except ConfigError as err:
        print(f"make compact: error: {err}", file=sys.stderr)
        return 2
    dead_letters = settings.dead_letters_path
    if settings.dead_letter_retention_days and DeltaTable.is_deltatable(str(dead_letters)):
        print(f"{dead_letters}: {purge(dead_letters, settings.dead_letter_retention_days)}")
    retention = Retention(settings.log_retention_hours, settings.vacuum_retention_hours)
    for path in (settings.bronze_path, dead_letters, settings.event_log_path):
        if DeltaTable.is_deltatable(str(path)):
            print(f"{path}: {upkeep(path, retention)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
