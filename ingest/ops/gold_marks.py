"""Gold's marks on silver: handed to a refresh cycle's build, and moved by a job that rewrites silver.

A gold table's mark is the largest ``silver_version`` in its rows: it has read silver's change
feed up to that version (macros/medallion/silver_changes.sql). The continuous refresh reads the
marks of the games it builds from their files with delta-rs, once per cycle, and hands them to
the build (ingest/ops/cycle_facts.py), so no gold model asks Spark for its own: that query was
the first read of the table's new snapshot, a Spark job over its Delta log each cycle.

A rewrite of silver (``ingest bronze migrate-native-types``) changes column types, which a change
feed read cannot cross, and its rows are not new: so gold must have read every insert before the
rewrite, and its mark then moves to the rewrite's version.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import pyarrow.compute as pc
from deltalake import DeltaTable

from ingest.games.layout import GOLD_KINDS, gold_table
from ingest.landing.delta.table_location import TableLocation, as_location
from ingest.landing.delta.table_scan import scan

MARK_COLUMN = "silver_version"
# Columns a gold model reads from its own stored rows that older tables lack until its next
# build adds them (macros/medallion/gold_player_agg.sql)
STORED_COLUMNS_READ = {"player_agg": ("last_purchase_at",)}


@dataclass(frozen=True)
class GoldReader:
    name: str  # schema.table, as dbt names it
    table: DeltaTable
    mark: int | None  # None: gold recomputes from a silver snapshot at its next build
    kind: str  # one of GOLD_KINDS
    game: str  # the game's slug


def silver_version_mark(table: DeltaTable) -> int | None:
    if MARK_COLUMN not in table.schema().to_arrow().names:
        return None  # built before gold kept its mark
    column = scan(table, [MARK_COLUMN]).column(0)
    return pc.max(column).as_py()


def gold_readers(tables_dir: Path | TableLocation, slug: str) -> list[GoldReader]:
    """The gold tables of game ``slug`` that have been built (``gold.db/gold_<slug>_<kind>``)."""
    found = []
    for kind in GOLD_KINDS:
        place = as_location(tables_dir).child(f"gold.db/{gold_table(slug, kind)}")
        if place.is_delta_table():
            table = place.delta_table()
            found.append(GoldReader(f"gold.{place.name}", table, silver_version_mark(table), kind, slug))
    return found


def move_gold_mark(gold: GoldReader, to: int) -> None:
    """``gold`` has read silver up to ``to``: its rows that hold its mark now hold ``to``."""
    if gold.mark is not None and gold.mark < to:
        gold.table.update(updates={MARK_COLUMN: str(to)}, predicate=f"{MARK_COLUMN} = {gold.mark}")


def gold_marks(tables_dir: Path | TableLocation, slugs: list[str]) -> dict[str, int]:
    """The marks of games ``slugs``' built gold tables, by ``schema.table``."""
    return handed_marks([gold for slug in slugs for gold in gold_readers(tables_dir, slug)])


def handed_marks(golds: list[GoldReader]) -> dict[str, int]:
    """The marks a build is handed, by ``schema.table``. A table without one (empty, or built
    before gold kept its mark) is left out, and so is one built before a column its model reads
    from its own rows: its build asks Spark, which tells it the table's columns."""
    return {gold.name: gold.mark for gold in golds if gold.mark is not None and _holds_columns_read(gold)}


def _holds_columns_read(gold: GoldReader) -> bool:
    names = set(gold.table.schema().to_arrow().names)
    return all(column in names for column in STORED_COLUMNS_READ.get(gold.kind, ()))
