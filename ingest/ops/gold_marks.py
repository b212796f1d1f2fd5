"""Gold's marks on silver, for a job that rewrites silver.

A gold table's mark is the largest ``silver_version`` in its rows: it has read silver's change
feed up to that version (macros/medallion/silver_changes.sql). A rewrite of silver (``ingest
bronze migrate-native-types``) changes column types, which a change feed read cannot cross, and
its rows are not new: so gold must have read every insert before the rewrite, and its mark then
moves to the rewrite's version.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import pyarrow.compute as pc
from deltalake import DeltaTable

from ingest.games.layout import GOLD_KINDS, gold_table

MARK_COLUMN = "silver_version"


@dataclass(frozen=True)
class GoldReader:
    name: str  # schema.table, as dbt names it
    table: DeltaTable
    mark: int | None  # None: gold recomputes from a silver snapshot at its next build


def silver_version_mark(table: DeltaTable) -> int | None:
    if MARK_COLUMN not in table.schema().to_arrow().names:
        return None  # built before gold kept its mark
    column = table.to_pyarrow_dataset().to_table(columns=[MARK_COLUMN]).column(0)
    return pc.max(column).as_py()


def gold_readers(tables_dir: Path, slug: str) -> list[GoldReader]:
    """The gold tables of game ``slug`` that have been built (``gold.db/gold_<slug>_<kind>``)."""
    found = []
    for kind in GOLD_KINDS:
        path = tables_dir / "gold.db" / gold_table(slug, kind)
        if DeltaTable.is_deltatable(str(path)):
            table = DeltaTable(str(path))
            found.append(GoldReader(f"gold.{path.name}", table, silver_version_mark(table)))
    return found


def move_gold_mark(gold: GoldReader, to: int) -> None:
    """``gold`` has read silver up to ``to``: its rows that hold its mark now hold ``to``."""
    if gold.mark is not None and gold.mark < to:
        gold.table.update(updates={MARK_COLUMN: str(to)}, predicate=f"{MARK_COLUMN} = {gold.mark}")
