"""A change to the refresh cycle, measured in pairs: warm refresh cycles with and without it, in
turn, in one Spark session.

    python -m bench.cycle_pairs --compare facts|gold-check|silver-check|gold-threads-N|gold-pools|
                                          gold-interpreted|histogram|one-statement|
                                          stats-columns|gold-write|shuffle-1|
                                          gold-shuffle-1|crc-files|snapshot-partitions-1|
                                          silver-threads-2|late-by-player
                                [--games 5] [--pairs 4] [--new 6000] [--warm-cycles 8]
                                [--day-rows 0]

The comparisons (``COMPARISONS``), each the refresh as it now runs against it without the change:

* ``facts``: what the models need handed over, read once per cycle for the games built (gold's
  marks from gold's files with delta-rs, the slice's bounds, dates and active games from the
  refresh's one look at the slice: ingest/ops/cycle_facts.py), against each model asking Spark;
* ``gold-check``: the refresh leaving ``assert_gold_rows_valid`` to ``dbt build`` and ``dbt
  test``, against running it in the cycle;
* ``silver-check``: silver's step of the split cycle without ``assert_silver_new_rows_valid``,
  whose rules silver's write guards (macros/medallion/silver_row_guard.sql), against it selected
  beside silver's models, as the refresh runs it (gold on 2 threads on both);
* ``gold-threads-N``: the second step split, silver on one thread and then gold on N dbt threads
  in the one Spark session (``ingest refresh --gold-threads N``), against one invocation on one
  thread;
* ``gold-pools``: gold on 2 dbt threads with each thread's Spark jobs in a FAIR scheduler pool of
  its own, so the two threads' jobs share the cores rather than queue, against the same threads
  in one pool, first come first served as the refresh runs them. Both sides run in a session
  started with ``spark.scheduler.mode=FAIR``: with every job in the one default pool, that pool
  schedules its jobs in order, as Spark's default FIFO mode does. A thread's pool is a local
  property of its thread, which dbt-spark does not set: this bench sets it before each statement
  dbt-spark's cursor runs;
* ``one-statement``: each built silver table and player_agg taking its rows in one statement
  (macros/project/lean_incremental.sql), against dbt-spark's path for every incremental model (a
  temporary view of the query and ``describe``s of it and of the table before the statement,
  ``GAMELAKE_INCREMENTAL=dbt-spark``); gold on 2 threads on both sides, as the refresh runs;
* ``gold-interpreted``: gold's step (after silver's, on 2 threads) run interpreted whatever the
  cycle's size, against the refresh, which runs the whole cycle compiled from 100,000 new rows
  (ingest/ops/codegen_mode.py): gold reads silver's new rows but writes a few rows a player or
  a day, and a compiled statement pays its code generation first;
* ``histogram``: the refresh with Delta's file size histogram left out of each snapshot's state
  (``spark.databricks.delta.fileSizeHistogramMetrics.enabled=false``), against Delta's default.
* ``stats-columns``: silver's and gold's files with Delta's statistics on the columns their readers
  skip by (``delta.dataSkippingStatsColumns``: ingest/ops/stats_columns.py, the refresh's since this
  comparison), against statistics on every column
  (Delta's default): each row a task writes goes through the statistics' aggregate, interpreted
  in a small cycle. A table property, so each block sets or unsets it on the tables first (one
  commit each, in the block's untimed cycle).
* ``gold-write``: each gold table (player_agg, daily_active) rewritten whole by one ``insert
  overwrite`` of its batch joined to the stored rows (macros/medallion/gold_*.sql), against the
  MERGEs they ran before: the gold macros and the incremental materialization at
  ``MERGE_REVISION`` (``GOLD_WRITE_FILES``), placed in the bench's project copy before each of
  that side's blocks; the warm runner parses again in the block's untimed cycle.
* ``shuffle-1``: every statement of the cycle with one shuffle partition
  (``spark.sql.shuffle.partitions=1``), against the session's 4. A small cycle's aggregates and
  joins shuffle a few thousand rows; each partition is a task the 2 cores schedule, and adaptive
  execution coalesces them only after the shuffle's map side ran. Both sides set it.
* ``gold-shuffle-1``: the same for gold's step alone (after silver's, on 2 threads): one shuffle
  partition from its start, the session's 4 before it; against 4 throughout.
* ``silver-threads-2``: silver's step on 2 dbt threads, each on a Spark session of its own
  (ingest/ops/thread_sessions.py, ``ingest refresh --silver-threads 2``), against silver on one
  thread; gold on 2 threads on both sides;
* ``crc-files``: each commit's checksum file (``NNN.crc``) listing the table's files up to
  ``CRC_FILES_UP_TO`` of them (``spark.databricks.delta.allFilesInCrc.thresholdNumFiles``),
  against Delta's 50. A reader of a version whose checksum lists its files needs no Spark job to
  rebuild the file list; silver's tables hold more than 50 files, gold's one.
* ``snapshot-partitions-1``: Delta's log replay (a snapshot's state: its files, their statistics
  and the sums a checksum holds) in one partition (``spark.databricks.delta.snapshotPartitions``),
  against the session's 2. A cycle's tables hold a checkpoint and a few commits each, and every
  commit leaves a snapshot whose state the next reader rebuilds with Spark jobs of that many
  tasks. Both sides set it.
* ``late-by-player``: with one event a game stamped just after the coming midnight (a console
  whose clock runs ahead, landed once before the sides' first blocks), the days of a
  daily_active batch judged late player by player (ingest/ops/daily_active_batches.py
  ``late_days``), against judged by player_agg's latest day alone, which that event moves to
  tomorrow: every batch of today is then recounted from silver's partition for the day. Gold on
  2 threads on both sides.

On bench.refresh_profile's private lakehouse (the repo's dbt project as it is now, 60,000 events
of history), ``--warm-cycles`` cycles run first (the JIT takes about 8 to settle,
bench/results/jvm_cpu.md), then ``--pairs`` pairs of blocks, one block per side. A
block is two cycles of one side and only its second is timed: a cycle leaves Delta snapshots read
or unread for the next one, so a timed cycle follows one of its own side. The order inside a pair
alternates. Before every cycle ``--new`` events land in bronze for all the games, so both sides
build the same amount. Each pair's two timed cycles, their ratio and the refresh upkeep's part
of each (compaction, vacuum and checkpoints, which come rarely and land in one side's cycle) are
printed and appended, with the machine and date, to the comparison's results file.
``--day-rows`` lands that many events of today first, built in untimed cycles of at most
``DAY_ROWS_A_CYCLE``, so that a statement reading today's partition reads a day of that size.
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import os
import statistics
import subprocess
import threading
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from bench.incremental import _bronze_rows, _land
from bench.jvm_cpu import process_cpu
from bench.refresh_profile import _cycle, open_lakehouse
from bench.results_file import append_section
from ingest.core.settings.paths import PROJECT_DIR
from ingest.ops import daily_active_batches, lakehouse_checkpoints
from ingest.ops.bronze_marks import ReaderMarks
from ingest.ops.bronze_watch import BronzeWatch
from ingest.ops.codegen_mode import set_mode
from ingest.ops.refresh_command import CycleSize
from ingest.ops.refresh_selection import GOLD_CHECK, SILVER_CHECK, after_slice_args
from ingest.ops.stats_columns import STATS_COLUMNS, stats_columns, wanted_columns
from ingest.ops.warm_dbt import WarmDbt

RESULTS_DIR = PROJECT_DIR / "bench" / "results"
# what decides how gold writes its rows, and the last revision where both gold tables merged
GOLD_WRITE_FILES = [
    Path("macros", "medallion", name)
    for name in ("gold_player_agg.sql", "gold_daily_active.sql", "gold_merge.sql")
] + [Path("macros", "project", "lean_incremental.sql")]
MERGE_REVISION = "b8b953e"
# Delta 4.4 adds an imperative aggregate (a file size histogram) to every snapshot's state
# reconstruction, which a MERGE's scan of gold runs (delta-io/delta#6854)
HISTOGRAM_CONF = "spark.databricks.delta.fileSizeHistogramMetrics.enabled"
SHUFFLE_PARTITIONS = "spark.sql.shuffle.partitions"
SHUFFLE_HEADING = (
    "# A cycle's statements on one shuffle partition, paired (bench/cycle_pairs.py --compare shuffle-1)\n"
)
CRC_FILES = "spark.databricks.delta.allFilesInCrc.thresholdNumFiles"
CRC_FILES_UP_TO = "10000"
SNAPSHOT_PARTITIONS = "spark.databricks.delta.snapshotPartitions"


def _stats_tables(spark: Any) -> list[tuple[str, str]]:
    """(schema.table, the columns its readers skip by) of the lakehouse's silver and gold tables."""
    found = []
    for schema in ("silver", "gold"):
        for row in spark.sql(f"show tables in {schema}").collect():
            if row.isTemporary:  # dbt's views of a statement's rows
                continue
            name = f"{schema}.{row.tableName}"
            held = [field.name for field in spark.table(name).schema.fields] if wanted_columns(name) else []
            columns = stats_columns(name, held)
            if columns is not None:
                found.append((name, columns))
    return found


def stats_on_readers_columns(spark: Any, project: Path) -> None:
    lakehouse_checkpoints.stats_columns = stats_columns
    for name, columns in _stats_tables(spark):
        spark.sql(f"alter table {name} set tblproperties ('{STATS_COLUMNS}' = '{columns}')")


def stats_on_every_column(spark: Any, project: Path) -> None:
    # the refresh's upkeep would set them again on the tables the block's first cycle writes
    lakehouse_checkpoints.stats_columns = lambda name, held: None
    for name, _ in _stats_tables(spark):
        spark.sql(f"alter table {name} unset tblproperties if exists ('{STATS_COLUMNS}')")


def gold_rewritten(spark: Any, project: Path) -> None:
    """The bench project's gold macros as the repo's: each table rewritten whole."""
    for path in GOLD_WRITE_FILES:
        _place(project / path, (PROJECT_DIR / path).read_text() if (PROJECT_DIR / path).exists() else None)


def gold_merged(spark: Any, project: Path) -> None:
    """The bench project's gold macros as they were at ``MERGE_REVISION``: MERGEs."""
    for path in GOLD_WRITE_FILES:
        shown = ["git", "show", f"{MERGE_REVISION}:{path}"]
        _place(
            project / path,
            subprocess.run(shown, cwd=PROJECT_DIR, check=True, capture_output=True, text=True).stdout,
        )


JUDGED_BY_PLAYER = daily_active_batches.late_days
AHEAD_ID = 10**12  # far above the bench's numbered events: its own event_id and Kafka offset
AHEAD_GAMER = "gamer-clock-ahead"
DAY_ROWS_A_CYCLE = 500_000  # --day-rows are built in cycles of at most this many


def _one_event_ahead(spark: Any, project: Path) -> None:
    """One event a game stamped one second after the coming UTC midnight, landed once: player_agg's
    latest day is then tomorrow for the rest of the run."""
    from pyspark.sql import functions as F

    bronze = project.parent / "warehouse" / "bronze" / "game_events"
    if spark.read.format("delta").load(str(bronze)).where(f"event_id = 'ev-{AHEAD_ID}'").count():
        return
    midnight = dt.datetime.combine(dt.datetime.now(dt.UTC).date() + dt.timedelta(days=1), dt.time())
    ahead = midnight.replace(tzinfo=dt.UTC) + dt.timedelta(seconds=1)
    games = json.loads((project.parent / "state.json").read_text())["games"]
    rows = _bronze_rows(spark, AHEAD_ID, len(games), games, 0.01)
    rows = rows.withColumns(  # a gamer of its own: the bench's numbered gamers recur every few cycles
        {"event_timestamp": F.lit(ahead), "gamer_id": F.lit(AHEAD_GAMER), "_kafka_key": F.lit(AHEAD_GAMER)}
    )
    _land(spark, bronze, rows.withColumn("event_date", F.to_date("event_timestamp")))


def recounting_daily_actives(project: Path) -> str:
    """How many daily_active tables the last build recounted a day of, from its compiled SQL."""
    built = list((project / "target" / "run").rglob("*_daily_active.sql"))
    recounting = sum("recounted_days" in path.read_text() for path in built)
    return f"{recounting} of {len(built)} daily_active recounted"


def late_judged_by_player(spark: Any, project: Path) -> None:
    _one_event_ahead(spark, project)
    daily_active_batches.late_days = JUDGED_BY_PLAYER


def late_judged_by_day(spark: Any, project: Path) -> None:
    _one_event_ahead(spark, project)
    daily_active_batches.late_days = lambda *_: None  # not judged: every day before it recounts


def _place(target: Path, text: str | None) -> None:
    # a new modification time: the warm runner parses again in the block's first (untimed) cycle
    if text is None:
        target.unlink(missing_ok=True)
    else:
        target.write_text(text)


def with_gold_check(selection: list[str]) -> list[str]:
    """The refresh's second invocation with ``assert_gold_rows_valid`` back in it."""
    args = after_slice_args(selection)
    if GOLD_CHECK not in args:
        raise SystemExit(f"the refresh already runs {GOLD_CHECK}: nothing to compare")
    return [a for a in args if a != GOLD_CHECK]


def without_silver_check(args: tuple[str, ...]) -> tuple[str, ...]:
    """The refresh's silver step without ``assert_silver_new_rows_valid``: unnamed and excluded,
    since with every game's silver selected the project's buildable indirect selection adds it
    back (its parents are all selected)."""
    kept = tuple(arg for arg in args if arg != SILVER_CHECK)
    if "--exclude" in kept:
        at = kept.index("--exclude") + 1
        return (*kept[:at], SILVER_CHECK, *kept[at:])
    return (*kept, "--exclude", SILVER_CHECK)


def with_silver_check(args: tuple[str, ...]) -> tuple[str, ...]:
    """The refresh's silver step with ``assert_silver_new_rows_valid`` selected beside its models."""
    if SILVER_CHECK in args:
        return args
    at = args.index("--select") + 1
    return (*args[:at], SILVER_CHECK, *args[at:])


@dataclass(frozen=True)
class Comparison:
    title: str  # the results section's title
    results: Path
    heading: str  # the results file's first line
    sides: dict[str, dict[str, Any]] = field(default_factory=dict)  # side -> _cycle's keywords
    confs: dict[str, dict[str, str]] = field(default_factory=dict)  # side -> Spark confs for its cycles
    pools: dict[str, bool] = field(default_factory=dict)  # side -> each dbt thread in its own pool
    environ: dict[str, dict[str, str]] = field(default_factory=dict)  # side -> environment for its cycles
    # side -> f(spark, the bench's dbt project), before each block of the side
    before_block: dict[str, Callable[[Any, Path], None]] = field(default_factory=dict)
    restore: Callable[[Any, Path], None] | None = None  # leaves the lakehouse as the refresh has it
    observe: Callable[[Path], str] | None = None  # what a timed cycle did, from the bench's dbt project


def _set_before_each_block(
    title: str,
    results: Path,
    heading: str,
    change: tuple[str, Callable[[Any, Path], None]],
    before: tuple[str, Callable[[Any, Path], None]],
    observe: Callable[[Path], str] | None = None,
) -> Comparison:
    """A comparison whose sides differ in what a hook sets before each of their blocks (gold on 2
    threads on both); the change's hook also leaves the lakehouse as the refresh has it."""
    return Comparison(
        title,
        results,
        heading,
        {change[0]: {"gold_threads": 2}, before[0]: {"gold_threads": 2}},
        before_block=dict([change, before]),
        restore=change[1],
        observe=observe,
    )


COMPARISONS = {
    "facts": Comparison(
        "Warm refresh cycles with the cycle's facts handed over, and with each model asking Spark",
        RESULTS_DIR / "cycle_facts_pairs.md",
        "# What each model needs, handed over once a cycle, paired (bench/cycle_pairs.py --compare facts)\n",
        {"facts handed (the refresh)": {"facts": True}, "each model asks Spark": {"facts": False}},
    ),
    "gold-check": Comparison(
        "Warm refresh cycles without and with assert_gold_rows_valid, in turn",
        RESULTS_DIR / "gold_check_pairs.md",
        "# The gold check in the refresh, paired (bench/cycle_pairs.py --compare gold-check)\n",
        {
            "without the check (the refresh)": {"second": after_slice_args},
            "with the check": {"second": with_gold_check},
        },
    ),
    "silver-check": Comparison(
        "Warm refresh cycles without and with assert_silver_new_rows_valid in silver's step, in turn",
        RESULTS_DIR / "silver_check_pairs.md",
        "# The silver check in the refresh, paired (bench/cycle_pairs.py --compare silver-check)\n",
        {
            "without the check": {"gold_threads": 2, "silver_step": without_silver_check},
            "with the check": {"gold_threads": 2, "silver_step": with_silver_check},
        },
    ),
    **{
        f"gold-threads-{n}": Comparison(
            f"Warm refresh cycles with gold on {n} dbt threads, and in one invocation on one",
            RESULTS_DIR / "gold_threads.md",
            "# Gold on several dbt threads in one Spark session, paired (bench/cycle_pairs.py --compare"
            " gold-threads-N)\n",
            {f"silver on 1 thread, then gold on {n}": {"gold_threads": n}, "one invocation, 1 thread": {}},
        )
        for n in (2, 3, 4)
    },
    "gold-pools": Comparison(
        "Warm refresh cycles with gold on 2 dbt threads, each in its own FAIR pool and in one pool",
        RESULTS_DIR / "gold_threads.md",
        "# Gold on several dbt threads in one Spark session, paired (bench/cycle_pairs.py --compare"
        " gold-threads-N)\n",
        {
            "gold on 2 threads, a FAIR pool each": {"gold_threads": 2},
            "gold on 2 threads, one pool": {"gold_threads": 2},
        },
        pools={"gold on 2 threads, a FAIR pool each": True, "gold on 2 threads, one pool": False},
    ),
    "one-statement": Comparison(
        "Warm refresh cycles with each built table's rows in one statement, and on dbt-spark's path",
        RESULTS_DIR / "one_statement_pairs.md",
        "# The incremental materialization's one statement, paired (bench/cycle_pairs.py --compare"
        " one-statement)\n",
        {"one statement (the project's)": {"gold_threads": 2}, "dbt-spark's path": {"gold_threads": 2}},
        environ={"dbt-spark's path": {"GAMELAKE_INCREMENTAL": "dbt-spark"}},
    ),
    "gold-interpreted": Comparison(
        "Warm refresh cycles with gold's step interpreted, and compiled or not as the cycle's size says",
        RESULTS_DIR / "gold_codegen_pairs.md",
        "# Gold's step interpreted whatever the cycle's size, paired (bench/cycle_pairs.py --compare"
        " gold-interpreted)\n",
        {
            "gold interpreted": {"gold_threads": 2, "gold_interpreted": True},
            "gold as the cycle (the refresh)": {"gold_threads": 2},
        },
    ),
    "histogram": Comparison(
        "Warm refresh cycles without and with Delta's file size histogram in each snapshot's state",
        RESULTS_DIR / "snapshot_histogram_pairs.md",
        "# Delta's file size histogram in the snapshot state, paired (bench/cycle_pairs.py --compare"
        " histogram)\n",
        {"histogram off": {"gold_threads": 2}, "histogram on (Delta's default)": {"gold_threads": 2}},
        {"histogram off": {HISTOGRAM_CONF: "false"}},
    ),
    "shuffle-1": Comparison(
        "Warm refresh cycles with one shuffle partition, and with the session's 4",
        RESULTS_DIR / "shuffle_partitions_pairs.md",
        SHUFFLE_HEADING,
        {"1 shuffle partition": {"gold_threads": 2}, "4 (the session's)": {"gold_threads": 2}},
        {"1 shuffle partition": {SHUFFLE_PARTITIONS: "1"}, "4 (the session's)": {SHUFFLE_PARTITIONS: "4"}},
    ),
    "gold-shuffle-1": Comparison(
        "Warm refresh cycles with gold's step on one shuffle partition, and on the session's 4",
        RESULTS_DIR / "shuffle_partitions_pairs.md",
        SHUFFLE_HEADING,
        {
            "gold on 1 shuffle partition": {"gold_threads": 2, "gold_confs": {SHUFFLE_PARTITIONS: "1"}},
            "4 (the session's)": {"gold_threads": 2},
        },
        {side: {SHUFFLE_PARTITIONS: "4"} for side in ("gold on 1 shuffle partition", "4 (the session's)")},
    ),
    "crc-files": Comparison(
        "Warm refresh cycles with the file list in each checksum up to 10,000 files, and up to 50",
        RESULTS_DIR / "crc_files_pairs.md",
        "# The table's files in each commit's checksum, paired (bench/cycle_pairs.py --compare crc-files)\n",
        {side: {"gold_threads": 2} for side in ("files in the checksum up to 10,000", "up to 50 (Delta's)")},
        {
            "files in the checksum up to 10,000": {CRC_FILES: CRC_FILES_UP_TO},
            "up to 50 (Delta's)": {CRC_FILES: "50"},
        },
    ),
    "snapshot-partitions-1": Comparison(
        "Warm refresh cycles with Delta's log replay in one partition, and in the session's 2",
        RESULTS_DIR / "snapshot_partitions_pairs.md",
        "# Delta's log replay in one partition, paired (bench/cycle_pairs.py --compare"
        " snapshot-partitions-1)\n",
        {side: {"gold_threads": 2} for side in ("log replay in 1 partition", "2 (the session's)")},
        {
            "log replay in 1 partition": {SNAPSHOT_PARTITIONS: "1"},
            "2 (the session's)": {SNAPSHOT_PARTITIONS: "2"},
        },
    ),
    "silver-threads-2": Comparison(
        "Warm refresh cycles with silver on 2 dbt threads, a Spark session each, and on 1",
        RESULTS_DIR / "silver_threads_pairs.md",
        "# Silver's step on two dbt threads, paired (bench/cycle_pairs.py --compare silver-threads-2)\n",
        {
            "silver on 2 threads, a session each": {"gold_threads": 2, "silver_threads": 2},
            "silver on 1 thread": {"gold_threads": 2},
        },
    ),
    "stats-columns": _set_before_each_block(
        "Warm refresh cycles with file statistics on the readers' columns, and on every column",
        RESULTS_DIR / "stats_columns_pairs.md",
        "# Silver's and gold's file statistics on the columns read by, paired (bench/cycle_pairs.py"
        " --compare stats-columns)\n",
        ("statistics on readers' columns", stats_on_readers_columns),  # as dbt and the upkeep leave them
        ("every column (Delta's default)", stats_on_every_column),
    ),
    "gold-write": _set_before_each_block(
        "Warm refresh cycles with each gold table rewritten whole, and merged",
        RESULTS_DIR / "gold_write_pairs.md",
        "# Gold's tables rewritten whole in one statement, against their MERGEs, paired"
        " (bench/cycle_pairs.py --compare gold-write)\n",
        ("gold rewritten whole (the project's)", gold_rewritten),
        ("gold by MERGE (before)", gold_merged),
    ),
    "late-by-player": _set_before_each_block(
        "Warm refresh cycles with one event a game ahead of the clock: late days judged player by"
        " player, and by player_agg's latest day",
        RESULTS_DIR / "late_days_pairs.md",
        "# A daily_active batch's late days judged player by player, against by player_agg's latest"
        " day, with one event ahead of the clock, paired (bench/cycle_pairs.py --compare"
        " late-by-player)\n",
        ("judged player by player (the refresh)", late_judged_by_player),
        ("by player_agg's latest day (before)", late_judged_by_day),
        observe=recounting_daily_actives,
    ),
}


def _pool_per_thread(spark: Any, on: dict[str, bool]) -> None:
    """Before each statement dbt-spark runs, its thread's Spark jobs go to a pool named after the
    thread while ``on["pools"]``, else to the default pool."""
    from dbt.adapters.spark import session as dbt_session

    execute = dbt_session.Cursor.execute

    def in_pool(self: Any, sql: str, *parameters: Any) -> None:
        pool = f"dbt-{threading.current_thread().name}" if on["pools"] else None
        spark.sparkContext.setLocalProperty("spark.scheduler.pool", pool)
        execute(self, sql, *parameters)

    dbt_session.Cursor.execute = in_pool  # type: ignore[method-assign]


def measure(
    comparison: Comparison, games: int, pairs: int, new: int, warm_cycles: int = 1, day_rows: int = 0
) -> list[dict[str, Any]]:
    pooled = {"pools": False}
    if comparison.pools:  # a static setting: before the session's JVM starts
        os.environ["PYSPARK_SUBMIT_ARGS"] = "--conf spark.scheduler.mode=FAIR pyspark-shell"
    root, state, spark = open_lakehouse(games)
    if comparison.pools:
        assert spark.sparkContext.getConf().get("spark.scheduler.mode") == "FAIR"
        _pool_per_thread(spark, pooled)
    project = root / "project"
    bronze = root / "warehouse" / "bronze" / "game_events"
    set_mode(spark, CycleSize(pending_rows=new).runs_interpreted())
    watch = BronzeWatch(bronze, ReaderMarks(root / "warehouse" / "spark" / "silver.db"))
    runner = WarmDbt(project, project / "profiles", parses=0)

    jvm = spark.sparkContext._gateway.proc.pid  # spark-submit execs the JVM under this pid

    def cycle(side: str) -> tuple[float, float, float]:
        """One cycle of ``side``: its wall time, of it the upkeep's (compact, vacuum, checkpoint),
        and the JVM's CPU seconds in it (steadier than wall time on a shared 2-core machine)."""
        _land(spark, bronze, _bronze_rows(spark, state["next_id"], new, state["games"], 0.01))
        state["next_id"] += new
        confs = comparison.confs.get(side, {})
        environ = comparison.environ.get(side, {})
        pooled["pools"] = comparison.pools.get(side, False)
        for key, value in confs.items():
            spark.conf.set(key, value)
        os.environ.update(environ)
        cpu_before = process_cpu(jvm)
        try:
            took, results, upkeep = _cycle(
                runner, spark, None, "refresh", watch, new, **comparison.sides[side]
            )
        finally:
            for key in confs:
                spark.conf.unset(key)
            for key in environ:
                del os.environ[key]
        failed = [r.node.name for r in results if r.status not in ("success", "pass")]
        if failed:
            raise SystemExit(f"the cycle failed: {failed}")
        return took, _upkeep_seconds(upkeep), process_cpu(jvm) - cpu_before

    sides = list(comparison.sides)
    try:
        for start in range(0, day_rows, DAY_ROWS_A_CYCLE):  # built in cycles of their own, untimed
            count = min(DAY_ROWS_A_CYCLE, day_rows - start)
            _land(spark, bronze, _bronze_rows(spark, state["next_id"], count, state["games"], 0.01))
            state["next_id"] += count
            print(f"today's rows: {start + count:,} of {day_rows:,} landed", flush=True)
            cycle(sides[0])
        for _ in range(warm_cycles):
            cycle(sides[0])
        measured = []
        for pair in range(pairs):
            times, upkeeps, cpus, notes = {}, {}, {}, {}
            for side in sides if pair % 2 == 0 else reversed(sides):
                if side in comparison.before_block:
                    comparison.before_block[side](spark, project)
                cycle(side)  # the block's first: it follows the other side
                times[side], upkeeps[side], cpus[side] = cycle(side)
                if comparison.observe is not None:
                    notes[side] = comparison.observe(project)
            print(
                f"pair {pair + 1}: "
                + ", ".join(
                    f"{s} {times[s]:.1f} s (upkeep {upkeeps[s]:.1f} s, JVM CPU {cpus[s]:.1f} s"
                    + (f"; {notes[s]})" if s in notes else ")")
                    for s in sides
                ),
                flush=True,
            )
            measured.append(
                times
                | {_upkeep_key(s): upkeeps[s] for s in sides}
                | {_cpu_key(s): cpus[s] for s in sides}
                | {_note_key(s): note for s, note in notes.items()}
            )
        if comparison.pools:  # the pools the scheduler made: the threads' own, beside "default"
            made = spark.sparkContext._jsc.sc().getAllPools()
            names = sorted(made.apply(i).name() for i in range(made.size()))
            print(f"pools: {names}", flush=True)
            assert any(name.startswith("dbt-") for name in names), names
    finally:
        (root / "state.json").write_text(json.dumps(state))
        if comparison.restore is not None:
            comparison.restore(spark, project)
        spark.stop()
    return measured


def _note_key(side: str) -> str:
    return f"{side} observed"


def _upkeep_key(side: str) -> str:
    return f"{side}: upkeep"


def _cpu_key(side: str) -> str:
    return f"{side}: JVM CPU"


def _upkeep_seconds(done: Any) -> float:
    """The upkeep's share of a cycle: a rare compaction or checkpoint lands in one side's cycle."""
    return 0.0 if done is None else done.compact_seconds + done.vacuum_seconds + done.checkpoint_seconds


def report(
    comparison: Comparison,
    games: int,
    new: int,
    measured: list[dict[str, Any]],
    warm_cycles: int = 1,
    day_rows: int = 0,
) -> list[str]:
    change, before = list(comparison.sides)
    today = f"; {day_rows:,} events of today landed and built first" if day_rows else ""
    observed = comparison.observe is not None
    lines = [
        f"{games} games, {new:,} new events for all of them before each cycle{today}; {warm_cycles} "
        "cycle(s) before the first pair; blocks of two warm cycles of one side in turn, each block's "
        "second timed",
        "",
        f"| pair | {change} s | {before} s | ratio | of them upkeep s | JVM CPU s |"
        + (" observed |" if observed else ""),
        "|---:|---:|---:|---:|---:|---:|" + ("---|" if observed else ""),
    ]
    ratios = [t[change] / t[before] for t in measured]
    for i, (times, ratio) in enumerate(zip(measured, ratios, strict=True), start=1):
        upkeep = f"{times[_upkeep_key(change)]:.1f} / {times[_upkeep_key(before)]:.1f}"
        cpu = f"{times.get(_cpu_key(change), 0):.1f} / {times.get(_cpu_key(before), 0):.1f}"
        seen = f" {times[_note_key(change)]} / {times[_note_key(before)]} |" if observed else ""
        lines.append(
            f"| {i} | {times[change]:.1f} | {times[before]:.1f} | {ratio:.2f} | {upkeep} | {cpu} |{seen}"
        )
    lines += [
        "",
        f"- median: {statistics.median(t[change] for t in measured):.1f} s {change}, "
        f"{statistics.median(t[before] for t in measured):.1f} s {before}; "
        f"median ratio {statistics.median(ratios):.2f}",
        f"- median saving per cycle: {statistics.median(t[before] - t[change] for t in measured):.1f} s",
        f"- JVM CPU a timed cycle, median: {statistics.median(t[_cpu_key(change)] for t in measured):.1f} s "
        f"{change}, {statistics.median(t[_cpu_key(before)] for t in measured):.1f} s {before}",
    ]
    return lines


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--compare", choices=sorted(COMPARISONS), required=True)
    parser.add_argument("--games", type=int, default=5)
    parser.add_argument("--pairs", type=int, default=4)
    parser.add_argument("--new", type=int, default=6000)
    parser.add_argument("--warm-cycles", type=int, default=8, help="cycles before the first pair")
    parser.add_argument(
        "--day-rows", type=int, default=0, help="events of today landed and built before the warm cycles"
    )
    args = parser.parse_args(argv)
    comparison = COMPARISONS[args.compare]
    measured = measure(comparison, args.games, args.pairs, args.new, args.warm_cycles, args.day_rows)
    lines = report(comparison, args.games, args.new, measured, args.warm_cycles, args.day_rows)
    append_section(comparison.results, comparison.title, lines, heading=comparison.heading)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
