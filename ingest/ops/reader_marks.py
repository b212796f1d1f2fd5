"""Bronze's readers (silver per game, quarantine) and their marks, for a job that rewrites bronze.

A reader keeps the bronze version it has read up to as a table property of its own
(``gamelake.bronze_version``, macros/medallion/bronze_marks.sql) and reads bronze's change feed
after it. A rewrite of bronze (``ingest bronze migrate-native-types``) must not be read as new
rows, and its version changes column types that a change feed read cannot cross: so every reader
must have read bronze up to the rewrite, and its mark is moved past it afterwards.
"""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass
from pathlib import Path

from deltalake import DeltaTable

from ingest.landing.table_properties import with_properties

MARK = "gamelake.bronze_version"
MARKED_AT = "gamelake.bronze_marked_at"


@dataclass(frozen=True)
class Reader:
    name: str  # schema.table, as dbt names it
    table: DeltaTable
    mark: int
    columns: frozenset[str]


def readers(tables_dir: Path) -> list[Reader]:
    """The Delta tables under ``tables_dir`` (``<schema>.db/<table>``) that hold a bronze mark."""
    found = []
    for path in sorted(tables_dir.glob("*.db/*")):
        if not DeltaTable.is_deltatable(str(path)):
            continue
        table = DeltaTable(str(path))
        mark = table.metadata().configuration.get(MARK)
        if mark is not None:
            name = f"{path.parent.name.removesuffix('.db')}.{path.name}"
            columns = frozenset(table.schema().to_arrow().names)
            found.append(Reader(name, table, int(mark), columns))
    return found


def readers_behind(found: list[Reader], bronze_version: int) -> list[str]:
    """Why each reader that has not read bronze up to ``bronze_version`` stops a rewrite."""
    return [f"{r.name} has read bronze up to version {r.mark}" for r in found if r.mark != bronze_version]


def readers_holding(found: list[Reader], columns: list[str]) -> list[str]:
    """Each reader that holds one of ``columns`` (passed through from bronze), with those columns."""
    held = []
    for r in found:
        names = sorted(r.columns & set(columns))
        if names:
            held.append(f"{r.name} holds {', '.join(names)}")
    return held


def move_marks(found: list[Reader], version: int) -> None:
    """Each reader has read bronze up to ``version`` now (the rewrite is behind it)."""
    now = dt.datetime.now(dt.UTC).strftime("%Y-%m-%d %H:%M:%S")
    for r in found:
        with_properties(r.table, {MARK: str(version), MARKED_AT: now})
