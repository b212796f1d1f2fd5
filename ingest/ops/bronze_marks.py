"""A bronze reader's mark as its Delta log holds it, read with delta-rs.

A reader (silver per game, silver_quarantine) records the bronze version it has read up to in
the commit that adds its rows: the commit's ``userMetadata`` names the reader and the version
(macros/medallion/bronze_marks.sql), so rows and mark commit together. A mark kept as the
table properties ``gamelake.bronze_version`` and ``gamelake.bronze_marked_at`` counts too: a
table built before marks rode in the data commit has one, and a bronze rewrite moves marks
that way (ingest/ops/migrations/reader_marks.py). Marks only move forward, so the later of the
two is the reader's mark.

Only a commit that writes the model's rows may carry a mark: a schema change the build makes
before its insert (``ADD COLUMNS``) runs under the same session conf, and must not count.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from deltalake import DeltaTable
from deltalake.exceptions import TableNotFoundError

from ingest.landing.delta.kept_table import KeptTable
from ingest.landing.delta.log_folder import log_folder
from ingest.landing.delta.log_state import commit_name
from ingest.landing.delta.table_location import TableLocation, as_location
from ingest.ops.dbt_build_lock import LOCK_TABLE

MARK = "gamelake.bronze_version"
MARKED_AT = "gamelake.bronze_marked_at"
READER = "gamelake.reader"
# Delta's names for the commits a dbt model's rows arrive in (an insert, or its first build)
ROW_COMMITS = frozenset(
    {"WRITE", "CREATE TABLE AS SELECT", "REPLACE TABLE AS SELECT", "CREATE OR REPLACE TABLE AS SELECT"}
)
HISTORY_DEPTH = 20  # commits looked back through: upkeep commits may follow the last build's


@dataclass(frozen=True, order=True)
class BronzeMark:
    version: int
    marked_at: str  # when the slice it read was built, 'YYYY-MM-DD HH:MM:SS' UTC


def committed_mark(commits: list[dict[str, Any]], reader: str) -> BronzeMark | None:
    """The mark in the newest of ``commits`` (newest first, as delta-rs' history gives them) that
    wrote ``reader``'s rows and names it; None when none does."""
    for commit in commits:
        if commit.get("operation") not in ROW_COMMITS or not commit.get("userMetadata"):
            continue
        try:
            metadata = json.loads(commit["userMetadata"])
        except (TypeError, ValueError):
            continue  # somebody else's metadata
        if isinstance(metadata, dict) and metadata.get(READER) == reader and MARK in metadata:
            return BronzeMark(int(metadata[MARK]), str(metadata[MARKED_AT]))
    return None


def property_mark(configuration: dict[str, str]) -> BronzeMark | None:
    if MARK not in configuration:
        return None
    return BronzeMark(int(configuration[MARK]), configuration.get(MARKED_AT, ""))


def bronze_mark(table: DeltaTable, reader: str) -> BronzeMark | None:
    """``reader``'s mark (``schema.table``, as dbt names it): the later of its data commits' and
    its table property's."""
    return later_of(
        committed_mark(table.history(HISTORY_DEPTH), reader),
        property_mark(table.metadata().configuration),
    )


def later_of(*marks: BronzeMark | None) -> BronzeMark | None:
    found = [mark for mark in marks if mark is not None]
    return max(found) if found else None


def commits_after(place: TableLocation, version: int, table: DeltaTable) -> list[dict[str, Any]]:
    """The commitInfo of ``table``'s commits after ``version``, newest first, as history gives
    them: read from the log, a GET each on S3 (delta-rs' ``history`` lists the log as well)."""
    folder = log_folder(place)
    infos = []
    for newer in range(table.version(), version, -1):
        text = folder.read_text(commit_name(newer))
        if text is None:  # cleaned up since: let delta-rs find what is left
            return table.history(table.version() - version)
        infos.append(_commit_info(text))
    return infos


def _commit_info(commit: str) -> dict[str, Any]:
    for line in commit.splitlines():
        action = json.loads(line) if line.strip() else {}
        if "commitInfo" in action:
            return dict(action["commitInfo"])
    return {}


HANDED_CONF = "spark.gamelake.reader_marks"


@dataclass(frozen=True)
class _Seen:
    kept: KeptTable
    version: int
    stamp: object  # its commit file's mtime or ETag: a table dropped and made again has another
    mark: BronzeMark | None


@dataclass
class ReaderMarks:
    """Every bronze reader's mark under a silver schema directory (``<warehouse>/silver.db``, a
    folder or an S3 prefix), read from the Delta logs once per refresh cycle and handed to the
    build's Spark session (spark.gamelake.reader_marks), so no model asks Spark for its own.
    Tables stay open between cycles: a table whose version did not move keeps the mark read before,
    and one that moved has only its new commits read. A table kept open is opened again, at its
    newest version, once the S3 keys are renewed (``KeptTable``): the same table all the same."""

    silver_dir: Path | TableLocation
    schema: str = "silver"
    _seen: dict[str, _Seen] = field(default_factory=dict)

    def read(self) -> dict[str, BronzeMark]:
        silver = as_location(self.silver_dir)
        # the build lock's table moves every cycle and holds no mark: its history would be read
        # for nothing, on S3 a GET a commit (bench/results/object_storage.md, 13:09)
        names = [name for name in silver.child_folders() if name != LOCK_TABLE.name]
        marks = {f"{self.schema}.{name}": self._mark(silver.child(name)) for name in names}
        return {name: mark for name, mark in marks.items() if mark is not None}

    def _mark(self, place: TableLocation) -> BronzeMark | None:
        seen = self._seen.pop(place.name, None)
        try:
            if seen is not None and _stamp(place, seen.version) == seen.stamp:
                kept = seen.kept
                kept.table.update_incremental()
            else:
                kept, seen = KeptTable(place), None  # new to this reader, or dropped and made again
            table = kept.table
        except (TableNotFoundError, OSError):
            return None  # not a Delta table (yet), or dropped
        version = table.version()
        reader = f"{self.schema}.{place.name}"
        if seen is None or version < seen.version:
            mark = bronze_mark(table, reader)
        elif version == seen.version:
            self._seen[place.name] = seen  # as read before, its stamp too: no second HEAD
            return seen.mark
        else:
            mark = self._moved_mark(seen, place, table, reader)
        self._seen[place.name] = _Seen(kept, version, _stamp(place, version), mark)
        return mark

    def _moved_mark(
        self, seen: _Seen, place: TableLocation, table: DeltaTable, reader: str
    ) -> BronzeMark | None:
        """A table read before that has moved: only the commits made since are read, not
        HISTORY_DEPTH of them, a GET each on S3 (bench/mark_reads.py). Marks only move forward,
        so the one read before still counts."""
        return later_of(
            seen.mark,
            committed_mark(commits_after(place, seen.version, table), reader),
            property_mark(table.metadata().configuration),
        )

    def versions(self) -> dict[str, int]:
        """Each table's Delta version as the last ``read`` found it, marked or not."""
        return {f"{self.schema}.{name}": seen.version for name, seen in self._seen.items()}

    def read_versions(self) -> dict[str, int]:
        """Each table the last ``read`` found, at its Delta version now: its open table follows the
        commits made since, and no history is read (a cycle's gold step needs versions, not marks).
        The marks stay as read at their versions, so the next ``read`` reads a moved table's again.
        A table made since is left out, and the build asks Spark for its version. Unlike ``read``,
        no table is checked for having been made again (``_stamp``, a HEAD each on S3): between
        a cycle's steps it holds the build lock, which every writer of silver takes."""
        versions: dict[str, int] = {}
        for name, seen in self._seen.items():
            try:
                table = seen.kept.table
                table.update_incremental()
            except (TableNotFoundError, OSError):
                continue  # unreadable now: the build asks Spark
            versions[f"{self.schema}.{name}"] = table.version()
        return versions

    def handed(self) -> str:
        """The marks as the build reads them: {"schema.table": [version, marked_at]}. A mark
        without its time cannot be judged fresh, so the build asks that table itself."""
        return json.dumps({n: [m.version, m.marked_at] for n, m in self.read().items() if m.marked_at})

    def hand_to(self, spark: Any) -> None:
        spark.conf.set(HANDED_CONF, self.handed())


def _stamp(place: TableLocation, version: int) -> object:
    return log_folder(place).identity(commit_name(version))
