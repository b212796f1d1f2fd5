"""Bronze's readers (silver per game, quarantine) and their marks, for a job that rewrites bronze.

A reader keeps the bronze version it has read up to in the commits of its own table
(ingest/ops/bronze_marks.py, macros/medallion/bronze_marks.sql) and reads bronze's change feed
after it. A rewrite of bronze (``ingest bronze migrate-native-types``) must not be read as new
rows, and its version changes column types that a change feed read cannot cross: so every reader
must have read bronze up to the rewrite, and its mark is moved past it afterwards, as the table
property ``gamelake.bronze_version`` (the later of a reader's two marks counts). A crash between
the rewrite and the move is repaired by the next run (``repair_marks``).
"""

from __future__ import annotations

import datetime as dt
import json
from dataclasses import dataclass

from deltalake import DeltaTable

from ingest.landing.delta.log_folder import log_folder
from ingest.landing.delta.log_state import commit_name
from ingest.landing.delta.table_location import TableLocation
from ingest.landing.delta.table_properties import with_properties
from ingest.ops.bronze_marks import MARK, MARKED_AT, bronze_mark


@dataclass(frozen=True)
class Reader:
    name: str  # schema.table, as dbt names it
    location: TableLocation
    table: DeltaTable
    mark: int
    columns: frozenset[str]


def readers(tables_dir: TableLocation) -> list[Reader]:
    """The Delta tables under ``tables_dir`` (``<schema>.db/<table>``) that hold a bronze mark."""
    found = []
    for name, place in _dbt_tables(tables_dir):
        if not place.is_delta_table():
            continue
        table = place.delta_table()
        mark = bronze_mark(table, name)
        if mark is not None:
            columns = frozenset(table.schema().to_arrow().names)
            found.append(Reader(name, place, table, mark.version, columns))
    return found


def _dbt_tables(tables_dir: TableLocation) -> list[tuple[str, TableLocation]]:
    """Each folder (on S3, prefix) ``<schema>.db/<table>`` under ``tables_dir``, as ``schema.table``."""
    found = []
    for schema in (name for name in tables_dir.child_folders() if name.endswith(".db")):
        folder = tables_dir.child(schema)
        prefix = schema.removesuffix(".db")
        found += [(f"{prefix}.{name}", folder.child(name)) for name in folder.child_folders()]
    return found


def readers_behind(found: list[Reader], bronze_version: int) -> list[str]:
    """Why each reader that has not read bronze up to ``bronze_version`` stops a rewrite."""
    return [f"{r.name} has read bronze up to version {r.mark}" for r in found if r.mark != bronze_version]


def inserting_versions(table: TableLocation, after: int, upto: int) -> list[int]:
    """The versions in (``after``, ``upto``] of ``table`` that add rows (an ``add`` marked as a
    data change): what a change feed read of that range finds inserted. Raises FileNotFoundError
    when the log no longer holds one of them."""
    log = log_folder(table)
    found = []
    for version in range(after + 1, upto + 1):
        commit = log.read_text(commit_name(version))
        if commit is None:
            raise FileNotFoundError(f"{log}/{commit_name(version)} (the log was cleaned up to a checkpoint)")
        for line in commit.splitlines():
            add = json.loads(line).get("add")
            if add is not None and add.get("dataChange", True):
                found.append(version)
                break
    return found


def has_read_all(table: TableLocation, mark: int, upto: int) -> bool:
    """Whether a reader at ``mark`` has read every insert of ``table`` up to ``upto``."""
    try:
        return not inserting_versions(table, mark, upto)
    except FileNotFoundError:
        return False


def move_marks(found: list[Reader], version: int) -> None:
    """Each reader has read bronze up to ``version`` now (the rewrite is behind it)."""
    now = dt.datetime.now(dt.UTC).strftime("%Y-%m-%d %H:%M:%S")
    for r in found:
        with_properties(r.table, {MARK: str(version), MARKED_AT: now})


def repair_marks(found: list[Reader], bronze: TableLocation, rewritten: int | None) -> dict[str, int]:
    """Each reader that has read every insert of bronze before its rewrite at version
    ``rewritten`` has read up to it: the marks a crash left behind that rewrite, moved."""
    if rewritten is None:
        return {}
    behind = [r for r in found if r.mark < rewritten and has_read_all(bronze, r.mark, rewritten - 1)]
    move_marks(behind, rewritten)
    return {r.name: rewritten for r in behind}
