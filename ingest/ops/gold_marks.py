"""Gold's marks on silver: handed to a refresh cycle's build, and moved by a job that rewrites silver.

A gold table's mark is the largest ``silver_version`` in its rows: it has read silver's change
feed up to that version (macros/medallion/silver_changes.sql). The continuous refresh reads the
marks of the games it builds from their files with delta-rs, once per cycle, and hands them to
the build (ingest/ops/cycle_facts.py), so no gold model asks Spark for its own: that query was
the first read of the table's new snapshot, a Spark job over its Delta log each cycle.

Silver keeps a few hours of Delta log (``ingest refresh --log-hours``): a gold table that trails
its silver further, whose mark's next commit the log no longer holds, cannot read the change feed
after it. It is handed no mark, and recomputes from a pinned snapshot of silver, as it does
without one (a build from a shell finds the same in silver's history).

A rewrite of silver (``ingest bronze migrate-native-types``) changes column types, which a change
feed read cannot cross, and its rows are not new: so gold must have read every insert before the
rewrite, and its mark then moves to the rewrite's version.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import pyarrow.compute as pc
from deltalake import DeltaTable

from ingest.games.layout import GOLD_KINDS, gold_table, silver_table
from ingest.landing.delta.log_folder import log_folder
from ingest.landing.delta.log_state import commit_name
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
    feed_kept: bool = True  # silver's log still holds the commits after the mark


def silver_version_mark(table: DeltaTable) -> int | None:
    if MARK_COLUMN not in table.schema().to_arrow().names:
        return None  # built before gold kept its mark
    column = scan(table, [MARK_COLUMN]).column(0)
    return pc.max(column).as_py()


def feed_kept_after(silver: TableLocation, mark: int) -> bool:
    """Whether ``silver``'s log still holds the commits after version ``mark``: commit ``mark + 1``,
    or, when silver has none yet, ``mark`` itself. A cleanup removes the oldest commits first and
    keeps its checkpoint's, so only a log cleaned past the mark lacks both."""
    folder = log_folder(silver)
    return folder.exists(commit_name(mark + 1)) or folder.exists(commit_name(mark))


def gold_readers(tables_dir: Path | TableLocation, slug: str) -> list[GoldReader]:
    """The gold tables of game ``slug`` that have been built (``gold.db/gold_<slug>_<kind>``)."""
    found: list[GoldReader] = []
    kept: dict[int, bool] = {}  # by mark: a game's gold tables mostly hold the same one
    silver = as_location(tables_dir).child(f"silver.db/{silver_table(slug)}")
    for kind in GOLD_KINDS:
        place = as_location(tables_dir).child(f"gold.db/{gold_table(slug, kind)}")
        if place.is_delta_table():
            table = place.delta_table()
            mark = silver_version_mark(table)
            if mark is not None and mark not in kept:
                kept[mark] = feed_kept_after(silver, mark)
            feed_kept = kept[mark] if mark is not None else True
            found.append(GoldReader(f"gold.{place.name}", table, mark, kind, slug, feed_kept))
    return found


def move_gold_mark(gold: GoldReader, to: int) -> None:
    """``gold`` has read silver up to ``to``: its rows that hold its mark now hold ``to``."""
    if gold.mark is not None and gold.mark < to:
        gold.table.update(updates={MARK_COLUMN: str(to)}, predicate=f"{MARK_COLUMN} = {gold.mark}")


def handed_marks(golds: list[GoldReader]) -> dict[str, int | None]:
    """The marks a build is handed, by ``schema.table``; None for a mark whose change feed
    silver's log no longer holds (the build recomputes). A table without one (empty, or built
    before gold kept its mark) is left out, and so is one built before a column its model reads
    from its own rows: its build asks Spark, which tells it the table's columns."""
    return {
        gold.name: gold.mark if gold.feed_kept else None
        for gold in golds
        if gold.mark is not None and _holds_columns_read(gold)
    }


def _holds_columns_read(gold: GoldReader) -> bool:
    names = set(gold.table.schema().to_arrow().names)
    return all(column in names for column in STORED_COLUMNS_READ.get(gold.kind, ()))
