"""Which columns of the refresh's tables carry Delta's file statistics.

Delta keeps a min, max and null count per column of every file it writes (the first 32 columns
by default), computed by an aggregate every written row goes through. The refresh writes silver's
new rows and rewrites each player_agg whole every cycle, while its readers skip files by a few
columns only. So each table keeps statistics on those (``delta.dataSkippingStatsColumns``): a
140,000-row cycle took 0.91x the time with 5 s less of the JVM's CPU, a 6,000-row one the same
time (bench/results/stats_columns_pairs.md). dbt creates the tables with them (dbt_project.yml,
macros/project/stats_columns.sql); the refresh's upkeep sets them on a table created before
(lakehouse_checkpoints.adopt_properties).
"""

from __future__ import annotations

from collections.abc import Iterable

from ingest.ops.refresh_selection import SLICE

STATS_COLUMNS = "delta.dataSkippingStatsColumns"
# silver's insert (its anti-join) and the silver check find a batch's rows by event_at within
# their dates (silver_game_events.sql, get_where_subquery.sql); an analyst looks a gamer up, or
# the rows of a bronze version
SILVER = ("event_at", "gamer_id", "bronze_version")
# the MERGE's key, and the times daily_active's batch dates come from (daily_active_batches.py)
PLAYER_AGG = ("gamer_id", "first_event_at", "last_event_at", "last_purchase_at")
DAILY_ACTIVE = ("event_date",)
# its readers find the bounds row by bronze_version's null count (bronze_slice.sql)
SLICE_COLUMNS = ("bronze_version",)


def wanted_columns(name: str) -> tuple[str, ...]:
    """The columns table ``name`` (``schema.table``) keeps statistics on; empty for a table the
    refresh does not build."""
    if name == SLICE:
        return SLICE_COLUMNS
    if name.startswith("silver.silver_"):
        return SILVER
    if name.startswith("gold.") and name.endswith("_player_agg"):
        return PLAYER_AGG
    if name.startswith("gold.") and name.endswith("_daily_active"):
        return DAILY_ACTIVE
    return ()


def stats_columns(name: str, held: Iterable[str]) -> str | None:
    """The value of ``STATS_COLUMNS`` for table ``name`` holding the columns ``held`` (Delta
    refuses a column the table lacks, as a player_agg built before last_purchase_at does); None
    when it keeps none of them."""
    present = set(held)
    columns = [column for column in wanted_columns(name) if column in present]
    return ",".join(columns) or None
