"""Upkeep of the tables dbt builds (each game's silver and gold, the quarantine, the slice):
compaction, vacuum and checkpoints of the tables a continuous refresh cycle wrote, in the same
hold of the build lock.

Without it, every cycle leaves a small file in each silver partition it wrote, and every gold
MERGE leaves behind the whole file it replaced. Today's silver partition grows by a file a
cycle, and the dedup anti-join and daily_active's source read it whole
(bench/results/day_partition_reads.md). Gold's replaced copies stay on disk for ever.

What is due is read from each table's Delta log with delta-rs, in milliseconds; Spark runs only
the compactions that are due (bench/results/upkeep_cost.md: a Spark OPTIMIZE or VACUUM costs
0.3-2.3 s a table even with nothing to do, delta-rs' reads and vacuum 5-64 ms).

- A partition holding ``compact_files`` files smaller than ``SMALL_BYTES`` is compacted by
  Spark's OPTIMIZE into files of up to ``FILE_BYTES``; a larger file is left alone, so a row is
  rewritten a bounded number of times. The OPTIMIZE runs compiled even in a cycle that runs
  interpreted (ingest/ops/codegen_mode.py): it reads every row of the files it packs. At most
  ``compactions_per_cycle`` tables a cycle, the fullest first, so games that fill up together
  are compacted over several cycles and no cycle stalls on all of them. OPTIMIZE's commit
  changes no data (``dataChange=false``): the change feed gold reads skips it, and the readers'
  marks look past it.
- delta-rs vacuums the files the log removed more than ``vacuum_hours`` ago, and at most
  ``log_hours``: a checkpoint keeps a removal no longer than the log (Delta's rule), and a
  removal it has dropped is one this vacuum no longer finds. When there are none, a table gets no
  commit. Gold reads silver's change feed from its own mark, and the feed needs the files of those
  versions: they stay while the log names them (a gold table trailing silver further recomputes
  from a snapshot, gold_marks.py), and the upkeep runs after a good build, when every gold table
  it visits has read its silver to the end. Full mode would also delete the hidden ``.crc``
  files Hadoop writes beside each live file of a partition on a local disk, a vacuum commit a cycle.
  The slice (``stg_bronze__new_events``), replaced whole every cycle and read only by the
  cycle that built it, is vacuumed in full mode after ``SLICE_VACUUM_HOURS``: before, every
  cycle left its files on storage for ever.
- delta-rs checkpoints the tables that ``checkpoint_commits`` commits have followed, a few a
  cycle, then removes their log older than ``log_hours`` (ingest/ops/lakehouse_checkpoints.py).
"""

from __future__ import annotations

import contextlib
import time
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from deltalake import DeltaTable

from ingest.core.identifiers import validate_slug
from ingest.games.layout import GOLD_KINDS, gold_table, silver_table
from ingest.landing.delta.table_location import TableLocation, as_location
from ingest.ops.codegen_mode import COMPILED
from ingest.ops.lakehouse_checkpoints import (
    DEFAULT_CHECKPOINT_COMMITS,
    DEFAULT_LOG_HOURS,
    adopt_properties,
    checkpoint,
    commits_behind,
    due_checkpoints,
)
from ingest.ops.refresh_selection import SLICE

# About 1M rows of demo events (56 bytes a row in silver): a day's partition keeps a few files,
# and its reads keep both cores (one file of a 3.2M-row day once made the anti-join slower than
# its 320 small ones: one task on 2 cores; bench/results/day_partition_reads.md).
FILE_BYTES = 64 * 1024 * 1024
# A packed file stops being rewritten once it reaches this. At half of FILE_BYTES a day's file
# just below it (27 MB, 826,400 rows) was rewritten whole with every 29 small files: 40.8 s
# interpreted, 7.3 s compiled, against 2.4 s and 1.2 s leaving it alone (bench/compaction_modes.py).
SMALL_BYTES = 4 * 1024 * 1024
PARTITION = "partition.event_date"
QUARANTINE = "silver_quarantine"
SLICE_VACUUM_HOURS = 1  # a reader of the slice's older versions outlives its cycle by far less
ALL_GAMES = "*"
DEFAULT_COMPACT_FILES = 30  # small files a partition holds before it is compacted
DEFAULT_VACUUM_HOURS = 168  # Delta's own default retention


def game_tables(slug: str) -> list[str]:
    """The tables dbt builds for one game, as ``schema.name``: its silver, then its gold."""
    validate_slug(slug, source="reference.games: game_slug")
    return [f"silver.{silver_table(slug)}", *(f"gold.{gold_table(slug, kind)}" for kind in GOLD_KINDS)]


@dataclass(frozen=True)
class Written:
    """What a good build wrote: its games' tables (ALL_GAMES: every game's), maybe the quarantine."""

    games: tuple[str, ...]
    quarantine: bool


EVERYTHING = Written((ALL_GAMES,), quarantine=True)


@dataclass(frozen=True)
class UpkeepPolicy:
    compact_files: int = DEFAULT_COMPACT_FILES  # 0: never compact
    vacuum_hours: int = DEFAULT_VACUUM_HOURS
    checkpoint_commits: int = DEFAULT_CHECKPOINT_COMMITS  # 0: leave checkpoints to Spark
    log_hours: float = DEFAULT_LOG_HOURS  # of Delta log each table keeps (lakehouse_checkpoints.py)

    @property
    def removal_hours(self) -> int:
        """How long a removed file stays: ``vacuum_hours``, at most ``log_hours``, for which the
        checkpoints keep its removal (Delta keeps those no longer than the log), and past which
        no version in the log reads it."""
        return int(min(self.vacuum_hours, self.log_hours))


@dataclass
class UpkeepDone:
    tables: int = 0  # looked at
    compacted: list[str] = field(default_factory=list)
    files_packed: int = 0
    files_vacuumed: int = 0
    checkpointed: list[str] = field(default_factory=list)
    properties_set: list[str] = field(default_factory=list)  # tables built before their interval or log hours
    compact_seconds: float = 0.0
    vacuum_seconds: float = 0.0
    checkpoint_seconds: float = 0.0


@dataclass(frozen=True)
class DueCompaction:
    table: str  # schema.name
    dates: tuple[str, ...]  # partitions to compact; empty: the whole (unpartitioned) table
    small_files: int


def upkeep_written(
    spark: Any, tables_dir: Path | TableLocation, written: Written, policy: UpkeepPolicy
) -> UpkeepDone:
    """Compact, vacuum and checkpoint what ``written`` says a build wrote, and the slice every
    good build writes; the caller holds the build lock."""
    done, root = UpkeepDone(), as_location(tables_dir)
    places = {name: _place(root, name) for name in [*_names(spark, written), SLICE]}
    tables = {name: place.delta_table() for name, place in places.items() if place.is_delta_table()}
    slice_table = tables.pop(SLICE, None)
    done.tables = len(tables)
    if policy.compact_files:
        _compact_due(spark, tables, policy, done)
    started = time.monotonic()
    for table in tables.values():
        done.files_vacuumed += vacuum(table, policy.removal_hours)
    if slice_table is not None:
        done.files_vacuumed += vacuum(slice_table, min(policy.vacuum_hours, SLICE_VACUUM_HOURS), full=True)
        tables[SLICE] = slice_table
    done.vacuum_seconds = time.monotonic() - started
    started = time.monotonic()
    done.properties_set = [
        name for name, table in tables.items() if adopt_properties(spark, name, table, policy.log_hours)
    ]
    if policy.checkpoint_commits:
        behind = [commits_behind(name, places[name], table) for name, table in tables.items()]
        due = due_checkpoints(behind, policy.checkpoint_commits)
        done.checkpointed = [name for name in due if checkpoint(name, tables[name], places[name])]
        done.checkpoint_seconds = time.monotonic() - started
    return done


def _place(root: TableLocation, name: str) -> TableLocation:
    return root.child(name.replace(".", ".db/", 1))


def _compact_due(spark: Any, tables: dict[str, DeltaTable], policy: UpkeepPolicy, done: UpkeepDone) -> None:
    due = [d for name, table in tables.items() if (d := due_compaction(name, table, policy.compact_files))]
    started = time.monotonic()
    for chosen in sorted(due, key=lambda d: -d.small_files)[: compactions_per_cycle(len(tables), policy)]:
        done.files_packed += compact(spark, chosen)
        done.compacted.append(chosen.table)
        tables[chosen.table].update_incremental()  # to the compaction's commit, for the vacuum
    done.compact_seconds = time.monotonic() - started


def compactions_per_cycle(tables: int, policy: UpkeepPolicy) -> int:
    """Enough that tables filling a file a cycle each are all compacted every ``compact_files``
    cycles, and at least one."""
    return 1 + tables // max(policy.compact_files, 1)


def _names(spark: Any, written: Written) -> list[str]:
    games = set(written.games) - {ALL_GAMES}
    if ALL_GAMES in written.games:
        games |= {str(row[0]) for row in spark.sql("select game_slug from reference.games").collect()}
    names = [table for game in sorted(games) for table in game_tables(game)]
    return names + ([f"silver.{QUARANTINE}"] if written.quarantine else [])


def due_compaction(name: str, table: DeltaTable, compact_files: int) -> DueCompaction | None:
    """The partitions of ``table`` (named ``name`` in Spark) holding ``compact_files`` small files
    or more."""
    files = table.get_add_actions(flatten=True)
    sizes = files.column("size_bytes").to_pylist()
    if PARTITION not in files.column_names:
        small = sum(size < SMALL_BYTES for size in sizes)
        return DueCompaction(name, (), small) if small >= compact_files else None
    dates = files.column(PARTITION).to_pylist()
    small_by_date = Counter(
        str(date) for date, size in zip(dates, sizes, strict=True) if size < SMALL_BYTES and date is not None
    )
    full = sorted(date for date, count in small_by_date.items() if count >= compact_files)
    return DueCompaction(name, tuple(full), sum(small_by_date[date] for date in full)) if full else None


def compact(spark: Any, due: DueCompaction) -> int:
    """Spark's OPTIMIZE of the due partitions; the number of files it packed."""
    where = ""
    if due.dates:
        where = " where event_date in (" + ", ".join(f"date '{date}'" for date in due.dates) + ")"
    with _session_conf(spark, _compaction_conf() | COMPILED):
        metrics = spark.sql(f"optimize {due.table}{where}").first()["metrics"]
    return int(metrics["numFilesRemoved"])


def vacuum(table: DeltaTable, hours: int, full: bool = False) -> int:
    """delta-rs' vacuum of the files removed more than ``hours`` ago, or with ``full`` of every
    file the table does not reference that is that old; no commit when none are."""
    expired = table.vacuum(retention_hours=hours, dry_run=True, enforce_retention_duration=False, full=full)
    if not expired:
        return 0
    return len(
        table.vacuum(retention_hours=hours, dry_run=False, enforce_retention_duration=False, full=full)
    )


def _compaction_conf() -> dict[str, str]:
    return {
        "spark.databricks.delta.optimize.maxFileSize": str(FILE_BYTES),
        "spark.databricks.delta.optimize.minFileSize": str(SMALL_BYTES),
    }


@contextlib.contextmanager
def _session_conf(spark: Any, conf: dict[str, str]) -> Iterator[None]:
    """``conf`` set in the session for the block, then what was there before put back."""
    before = {key: spark.conf.get(key, None) for key in conf}
    for key, value in conf.items():
        spark.conf.set(key, value)
    try:
        yield
    finally:
        for key, value in before.items():
            if value is None:
                spark.conf.unset(key)
            else:
                spark.conf.set(key, value)
