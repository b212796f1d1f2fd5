"""Upkeep of a landing table: compaction, vacuum, a checkpoint and log cleanup, in that order.

The service runs ``python -m ingest.landing.upkeep.table_upkeep`` in a child process every
``compact_every_commits`` commits, over bronze, dead letters and the event log
(``BackgroundUpkeep`` in compaction.py); ``make compact`` runs the same steps in the foreground.

Each step is safe beside landing. Compaction holds the table's compaction lock and moves no
offsets (an append that races it re-checks its offsets and retries). A checkpoint and the log
cleanup add no data: the cleanup deletes only log files older than ``log_hours`` that a
checkpoint already covers. Vacuum (full mode) deletes only files that the current version does
not reference, whose remove action is over an hour old or gone, and that were written more than
``vacuum_hours`` ago, so the files of a batch being written now are never touched, and a file
replaced now stays at least an hour for readers of older versions.

The retention is what bounds ``_delta_log`` and the table folder at steady state: about
``log_hours`` of commits and ``vacuum_hours`` of replaced files. It is also how far behind a
reader of the change data feed may fall (silver's marks): a mark older than ``log_hours`` can no
longer be read by version, so keep it well above the longest pause of ``ingest refresh``.
"""

from __future__ import annotations

import contextlib
import json
import sys
from dataclasses import dataclass
from pathlib import Path

from ingest.landing import crash_points
from ingest.landing.delta.kept_table import KeptTable
from ingest.landing.delta.log_folder import log_folder
from ingest.landing.delta.table_location import TableLocation
from ingest.landing.delta.table_properties import TABLE_CONFIGURATION, with_fixed_properties
from ingest.landing.upkeep.compaction import compact

# How long a checkpoint keeps the remove action (tombstone) of a replaced file. At 10,000
# events/s the upkeep replaces about 15,000 files an hour; kept for the 168-hour vacuum
# retention, the tombstones would make every checkpoint (written each upkeep, read by every
# reader that opens the table: Spark, status, a restarting service) about 90 bytes each, some
# 200 MB after a week (8.7 MB at 100,000: bench/results/commit_cost.md; a commit's own cost does
# not depend on them). The files themselves still stay ``vacuum_hours`` from their writing:
# vacuum runs in full mode, which deletes a file no version references once it is that old,
# tombstone or not (and so also the files of a batch that crashed before its commit).
TOMBSTONE_HOURS = 1


@dataclass(frozen=True)
class Retention:
    log_hours: int
    vacuum_hours: int

    @property
    def tombstone_hours(self) -> int:
        return min(self.vacuum_hours, TOMBSTONE_HOURS)

    def properties(self) -> dict[str, str]:
        """The table properties that delta-rs's log cleanup and checkpoints read."""
        return {
            "delta.checkpointInterval": TABLE_CONFIGURATION["delta.checkpointInterval"],
            "delta.logRetentionDuration": f"interval {self.log_hours} hours",
            "delta.deletedFileRetentionDuration": f"interval {self.tombstone_hours} hours",
        }


def upkeep(place: Path | TableLocation, retention: Retention) -> dict[str, object]:
    """Compact, vacuum, checkpoint and clean the log of the table at ``place``; what each step did."""
    path = place if isinstance(place, TableLocation) else TableLocation.of(place)
    logs_before = _log_files(path)
    # One handle for every step, brought forward between them: on S3 each load of the log from
    # its checkpoint GETs every commit since, twice with delta-rs 1.6.6 (bench/upkeep_requests.py).
    # Opened again only when the S3 keys were renewed during a long step.
    kept = KeptTable(path)
    # A checkpoint first: each refresh and commit of the service replays every commit since the
    # newest checkpoint, so one taken only after a long compaction lets that replay grow.
    kept.table.create_checkpoint()
    compacted = compact(path, kept)
    table = kept.table
    table.update_incremental()
    with_fixed_properties(table, retention.properties())
    vacuumed = table.vacuum(
        retention_hours=retention.vacuum_hours, dry_run=False, enforce_retention_duration=False, full=True
    )
    table = kept.table
    table.update_incremental()
    table.create_checkpoint()
    # delta-rs also cleans the expired log after its own commits (compaction, vacuum), so what
    # was removed is counted from before the compaction.
    table.cleanup_metadata()
    return {
        **compacted,
        "version": table.version(),
        "log_files_removed": len(logs_before - _log_files(path)),
        "files_vacuumed": len(vacuumed),
    }


def _log_files(path: TableLocation) -> set[str]:
    """Commit and checkpoint files by name: appends that land meanwhile add names, never remove."""
    return set(log_folder(path).matching("0*"))


def main(argv: list[str]) -> int:
    """``upkeep LOG_HOURS VACUUM_HOURS PATH...``: one JSON line, ``{path: result}``."""
    crash_points.install()
    retention = Retention(int(argv[1]), int(argv[2]))
    results = {}
    for raw in argv[3:]:
        location = TableLocation.of(raw)
        if location.is_delta_table():
            results[location.uri.rsplit("/", 1)[1]] = upkeep(location, retention)
    with contextlib.suppress(BrokenPipeError):  # the service that started us was killed: nobody to tell
        print(json.dumps(results), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
