"""Upkeep of a landing table: compaction, vacuum, a checkpoint and log cleanup, in that order.

The service runs ``python -m ingest.landing.upkeep`` in a child process every
``compact_every_commits`` commits, over bronze, dead letters and the event log
(``BackgroundUpkeep`` in compaction.py); ``make compact`` runs the same steps in the foreground.

Each step is safe beside landing. Compaction holds the table's compaction lock and moves no
offsets (an append that races it re-checks its offsets and retries). A checkpoint and the log
cleanup add no data: the cleanup deletes only log files older than ``log_hours`` that a
checkpoint already covers. Vacuum deletes only files that no version of the last
``vacuum_hours`` references and that are older than that, so the files of a batch being written
now are never touched.

The retention is what bounds ``_delta_log`` and the table folder at steady state: about
``log_hours`` of commits and ``vacuum_hours`` of replaced files. It is also how far behind a
reader of the change data feed may fall (silver's marks): a mark older than ``log_hours`` can no
longer be read by version, so keep it well above the longest pause of ``ingest refresh``.
"""

from __future__ import annotations

import json
import sys
from dataclasses import dataclass
from pathlib import Path

from deltalake import DeltaTable

from ingest.landing import crash_points
from ingest.landing.compaction import compact
from ingest.landing.table_properties import TABLE_CONFIGURATION, with_properties


@dataclass(frozen=True)
class Retention:
    log_hours: int
    vacuum_hours: int

    def properties(self) -> dict[str, str]:
        """The table properties that delta-rs's log cleanup and other engines' vacuum read."""
        return {
            "delta.checkpointInterval": TABLE_CONFIGURATION["delta.checkpointInterval"],
            "delta.logRetentionDuration": f"interval {self.log_hours} hours",
            "delta.deletedFileRetentionDuration": f"interval {self.vacuum_hours} hours",
        }


def upkeep(path: Path, retention: Retention) -> dict[str, object]:
    """Compact, vacuum, checkpoint and clean the log of the table at ``path``; what each step did."""
    logs_before = _log_files(path)
    compacted = compact(path)
    table = DeltaTable(str(path))
    with_properties(table, retention.properties())
    vacuumed = table.vacuum(
        retention_hours=retention.vacuum_hours, dry_run=False, enforce_retention_duration=False
    )
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


def _log_files(path: Path) -> set[str]:
    """Commit and checkpoint files by name: appends that land meanwhile add names, never remove."""
    return {entry.name for entry in (path / "_delta_log").glob("0*")}


def main(argv: list[str]) -> int:
    """``upkeep LOG_HOURS VACUUM_HOURS PATH...``: one JSON line, ``{path: result}``."""
    crash_points.install()
    retention = Retention(int(argv[1]), int(argv[2]))
    results = {}
    for raw in argv[3:]:
        path = Path(raw)
        if DeltaTable.is_deltatable(str(path)):
            results[path.name] = upkeep(path, retention)
    print(json.dumps(results), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
