"""``make compact``: the dead-letter purge, then upkeep of the landing tables now, on a local
disk or on S3 (``warehouse_uri``).

The service does the same upkeep every ``compact_every_commits`` commits, in a child process.

Runs beside the service safely: see ingest/landing/upkeep/table_upkeep.py.
"""

from __future__ import annotations

import sys

from ingest.core.errors import ConfigError
from ingest.core.settings.ingest_settings import load_settings
from ingest.landing.delta.table_location import TableLocation
from ingest.landing.upkeep.table_upkeep import Retention, upkeep
from ingest.ops.dead_letter_purge import purge


def main() -> int:
    try:
        settings = load_settings()
    except ConfigError as err:
        print(f"make compact: error: {err}", file=sys.stderr)
        return 2
    bronze, dead_letters, event_log = (
        TableLocation.of(settings.landing_table(name))
        for name in ("game_events", "dead_letters", "ingest_event_log")
    )
    if settings.dead_letter_retention_days and dead_letters.is_delta_table():
        print(f"{dead_letters}: {purge(dead_letters, settings.dead_letter_retention_days)}")
    retention = Retention(settings.log_retention_hours, settings.vacuum_retention_hours)
    for table in (bronze, dead_letters, event_log):
        if table.is_delta_table():
            print(f"{table}: {upkeep(table, retention)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
