"""Bronze as the continuous refresh watches it, with delta-rs: its version, when each new version
was first seen (how far silver and gold trail), the rows each commit added (the slice's row
bound, macros/medallion/bronze_slice.sql), and its readers' marks (ingest/ops/bronze_marks.py)."""

from __future__ import annotations

import json
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from deltalake import DeltaTable

from ingest.landing.decode.bronze_columns import ROWS_KEY
from ingest.landing.delta.kept_table import KeptTable
from ingest.landing.delta.table_location import TableLocation, as_location
from ingest.ops.bronze_marks import ReaderMarks

ROWS_CONF = "spark.gamelake.bronze_commit_rows"
VERSIONS_CONF = "spark.gamelake.table_versions"
BRONZE_RELATION = "bronze.game_events"  # dbt's source('bronze', 'game_events')
ROWS_LOOKBACK = 1000  # bronze commits whose rows the refresh keeps for the slice's row bound


@dataclass
class BronzeWatch:
    """Bronze's Delta version, polled with delta-rs, and when each new version was first seen."""

    path: Path | TableLocation  # a folder, or a prefix on S3
    readers: ReaderMarks  # bronze's readers, whose marks each build is handed
    seen_at: dict[int, float] = field(default_factory=dict)
    kept: KeptTable | None = None  # bronze, kept open between polls
    table: DeltaTable | None = None  # bronze as last polled
    rows: dict[int, int] = field(default_factory=dict)  # bronze version -> rows it added

    def version(self) -> int | None:
        if self.kept is None:
            place = as_location(self.path)
            if not place.is_delta_table():
                return None
            self.kept = KeptTable(place)
        self.table = self.kept.table
        self.table.update_incremental()
        version = self.table.version()
        self.seen_at.setdefault(version, time.time())
        self._read_rows(version)
        return version

    def _read_rows(self, version: int) -> None:
        """The rows of each commit since the last look (at most ROWS_LOOKBACK of them)."""
        newest = max(self.rows, default=-1)
        if version <= newest or self.table is None:
            return
        for info in self.table.history(min(version - newest, ROWS_LOOKBACK)):
            self.rows[int(info["version"])] = commit_rows(info)

    def rows_after(self, built: int | None) -> int | None:
        """The rows bronze's commits added after version ``built``; None when that is not known
        (no build yet, or a version the watch did not keep)."""
        if built is None or self.table is None:
            return None
        wanted = range(built + 1, self.table.version() + 1)
        if any(version not in self.rows for version in wanted):
            return None
        return sum(self.rows[version] for version in wanted)

    def lag(self, built: int | None) -> float:
        """Seconds since the first version after ``built`` was seen; 0 when none is newer."""
        newer = [at for version, at in self.seen_at.items() if built is None or version > built]
        return time.time() - min(newer) if newer else 0.0

    def forget_up_to(self, built: int) -> None:
        self.seen_at = {v: at for v, at in self.seen_at.items() if v > built}
        # kept a while: a reader whose build failed re-reads from its own mark
        self.rows = {v: n for v, n in self.rows.items() if v > built - ROWS_LOOKBACK}

    def hand_versions_to(self, spark: Any) -> None:
        """The readers' marks, and the versions of bronze and of the readers as their Delta logs
        hold them now, read once for the build (macros/medallion/bronze_marks.sql)."""
        self.readers.hand_to(spark)
        self._hand_versions(spark, self.readers.versions())

    def hand_table_versions_to(self, spark: Any) -> None:
        """The readers' versions as their Delta logs hold them now, and bronze's as polled, without
        reading the marks again: what a cycle's gold step reads, silver as of the version its silver
        step committed. Gold reads no reader's mark (spark.gamelake.reader_marks)."""
        self._hand_versions(spark, self.readers.read_versions())

    def _hand_versions(self, spark: Any, versions: dict[str, int]) -> None:
        if self.table is not None:
            versions[BRONZE_RELATION] = self.table.version()
        spark.conf.set(VERSIONS_CONF, json.dumps(versions))

    def hand_rows_to(self, spark: Any) -> None:
        """The rows per version for the slice's row bound (macros/medallion/bronze_slice.sql)."""
        spark.conf.set(ROWS_CONF, json.dumps({str(v): n for v, n in self.rows.items()}))


def commit_rows(info: dict[str, Any]) -> int:
    """The rows a bronze commit added, from its commitInfo: the ingest's gamelake.rows, else
    Spark's numOutputRows or delta-rs's num_added_rows; 0 when none says (a compaction)."""
    metrics = info.get("operationMetrics") or {}
    return int(info.get(ROWS_KEY) or metrics.get("numOutputRows") or metrics.get("num_added_rows") or 0)
