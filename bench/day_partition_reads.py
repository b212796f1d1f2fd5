"""What the per-cycle reads of today's silver partition cost as the day fills: a growth law.

    python -m bench.day_partition_reads [--rows-per-cycle 10000] [--cycles 10 40 120] [--rounds 3]

Every refresh cycle inserts each game's new rows into silver, one file per touched event_date
partition, and the partition of today takes one more file each cycle. Two reads of each cycle
read that whole partition, not the new rows:

- gold ``_daily_active``'s source (macros/medallion/gold_daily_active.sql): the distinct
  players of the batch's dates, recomputed from silver's rows of those dates;
- silver's dedup anti-join (macros/medallion/silver_game_events.sql): the ``event_id`` of the
  batch's date partitions, against the batch. Timed as it was, over the partitions whole, and as
  it runs now, bounded by the batch's earliest and latest event times as literals so Delta skips
  the files outside them; and bounded for a batch with one event ``LATE_CYCLES`` cycles late,
  which widens the bound over the files written since.

A third read is the all-games silver check (macros/games/new_rows_checks.sql), timed three ways:
as it ran, over the batch's date partitions whole (every row's validity, every event_id
grouped); as it runs now, over the rows of those partitions between the batch's event times
(the batch's own rows are in silver in the product, not here: this times the files around
them); and over the batch's rows, with only their event_ids looked up in those partitions.
The second is the reads alone: the batch here is a view, where the product would read it from
silver's change feed and the partitions at the version before the build (tried at stop 48 and
reverted: those two reads cost a warm 5-game cycle's check 5.0 s against 1.3 s,
bench/results/refresh_profile.md, 06:19).

In one warm local Spark session, a Delta table shaped like a game's silver (partitioned by
event_date) takes ``--rows-per-cycle`` rows a cycle into today's partition; at each count of
``--cycles`` both reads are timed (``--rounds`` each after a warm-up, median). Then today's partition is
compacted as the continuous refresh's upkeep does it (ingest/ops/lakehouse_upkeep.py: files of
up to 64 MB), then into one file (Delta's default target), and both are timed again: the same
rows in fewer files tell the files' share from the rows'. Printed and appended to
bench/results/day_partition_reads.md with the machine and date.
"""

from __future__ import annotations

import argparse
import statistics
import tempfile
import time
from pathlib import Path
from typing import Any

from deltalake import DeltaTable

from bench.results_file import append_section
from ingest.core.settings.paths import PROJECT_DIR
from ingest.ops.lakehouse_upkeep import DEFAULT_COMPACT_FILES, compact, due_compaction

RESULTS = PROJECT_DIR / "bench" / "results" / "day_partition_reads.md"
TODAY = "2026-11-27"
BATCH = 1000  # new rows of a cycle against which the anti-join runs
LATE_CYCLES = 30  # how far back the late event of a batch is: the bound then spans 30 cycles' files

DAILY_ACTIVE_SOURCE = f"""
select event_date, count(distinct gamer_id), count(distinct if(event_type = 'purchase', gamer_id, null)),
       count_if(event_type = 'session_start'), count(*)
from t where event_date in (date '{TODAY}') group by event_date
"""
SILVER_ANTI_JOIN = f"""
select count(*) from batch left anti join (
    select event_id, event_date from t as loaded where event_date in (date '{TODAY}'){{bound}}
) as loaded on batch.event_id = loaded.event_id and batch.event_date = loaded.event_date
"""
# as silver_game_events.sql bounds it: the batch's earliest and latest event times, as literals
EVENT_TIME_BOUND = " and loaded.event_at between timestamp '{}' and timestamp '{}'"
BATCH_EVENT_TIMES = (
    "select date_format(min(event_at), 'yyyy-MM-dd HH:mm:ss.SSSSSS'),"
    " date_format(max(event_at), 'yyyy-MM-dd HH:mm:ss.SSSSSS') from {}"
)


KNOWN_TYPES = "('session_start', 'match_start', 'purchase', 'level_up')"
SILVER_CHECK_DAY = f"""
with new_rows as (
    select event_id, gamer_id, event_type from t as loaded where event_date in (date '{TODAY}'){{bound}}
)
select count(*) from (
    select event_id from new_rows group by event_id having count(*) > 1
    union all
    select event_id from new_rows
    where event_id is null or gamer_id is null or event_type not in {KNOWN_TYPES}
)
"""
SILVER_CHECK_BATCH = f"""
with new_rows as (
    select event_id, gamer_id, event_type from batch
),
ids as (
    select held.event_id from t as held
    left semi join new_rows on held.event_id = new_rows.event_id
    where event_date in (date '{TODAY}')
)
select count(*) from (
    select event_id from ids group by event_id having count(*) > 1
    union all
    select event_id from new_rows
    where event_id is null or gamer_id is null or event_type not in {KNOWN_TYPES}
)
"""


def silver_like_rows(spark: Any, first_id: int, rows: int) -> Any:
    return spark.range(first_id, first_id + rows).selectExpr(
        "concat('ev-', id) as event_id",
        "concat('gamer-', id % 5000) as gamer_id",
        "element_at(array('session_start', 'match_start', 'purchase', 'level_up'), cast(id % 4 + 1 as int))"
        " as event_type",
        f"date '{TODAY}' as event_date",
        "id % 100000 as score",
        "repeat('x', 40) as device_id",
        # columns as varied as silver's, so the table's bytes per row, which OPTIMIZE's file
        # size counts, are near a real silver table's (about 56 here)
        "concat('s-', id * 7919 % 100003) as session_id",
        "cast(id * 2654435761 % 900000 as bigint) as duration_ms",
        "rand() * 200 as network_latency_ms",
        "cast(id as bigint) as kafka_offset",
        "timestamp_seconds(1795000000 + id div 10) as ingested_at",
        # events land in about the order they happen, up to a minute late
        "timestamp_seconds(1795000000 + id div 10 - id % 61) as event_at",
    )


def _late_batch(spark: Any, first_id: int, cycles_late: int, per_cycle: int) -> Any:
    """The batch with its first event ``cycles_late`` cycles late (a phone that was offline): the
    bound widens over the files written since. A cycle's rows span ``per_cycle`` / 10 s of event
    time here."""
    back = f"event_at - interval {cycles_late * per_cycle // 10} seconds"
    late = f"if(event_id = 'ev-{first_id}', {back}, event_at)"
    return silver_like_rows(spark, first_id, BATCH).selectExpr("* except (event_at)", f"{late} as event_at")


def median_seconds(spark: Any, sql: str, rounds: int) -> float:
    spark.sql(sql).collect()  # warm-up: the snapshot's file list, the plan's code
    times = []
    for _ in range(rounds):
        started = time.perf_counter()
        spark.sql(sql).collect()
        times.append(time.perf_counter() - started)
    return statistics.median(times)


def _files(spark: Any, table: Path) -> tuple[int, int]:
    """(live files, their bytes)."""
    detail = spark.sql(f"describe detail delta.`{table}`").first()
    return int(detail["numFiles"]), int(detail["sizeInBytes"])


def measure(spark: Any, table: Path, per_cycle: int, cycles: list[int], rounds: int) -> list[str]:
    rows_done = 0  # the first append makes the table
    lines = []
    for target in sorted(cycles):
        while rows_done // per_cycle < target:
            silver_like_rows(spark, rows_done, per_cycle).coalesce(1).write.format("delta").mode(
                "append"
            ).partitionBy("event_date").save(str(table))
            rows_done += per_cycle
        lines.append(_row(spark, table, f"{target} cycles", rows_done, per_cycle, rounds))
    due = due_compaction(f"delta.`{table}`", DeltaTable(str(table)), DEFAULT_COMPACT_FILES)
    assert due is not None, "today's partition holds more small files than the upkeep leaves"
    started = time.perf_counter()
    compact(spark, due)
    took = time.perf_counter() - started
    label = f"{max(cycles)} cycles, compacted as the refresh's upkeep does ({took:.1f} s)"
    lines.append(_row(spark, table, label, rows_done, per_cycle, rounds))
    spark.sql(f"optimize delta.`{table}`")  # Delta's default target, 1 GB: one file
    lines.append(
        _row(spark, table, f"{max(cycles)} cycles, compacted into one file", rows_done, per_cycle, rounds)
    )
    return lines


def _row(spark: Any, table: Path, label: str, rows: int, per_cycle: int, rounds: int) -> str:
    spark.read.format("delta").load(str(table)).createOrReplaceTempView("t")
    silver_like_rows(spark, rows, BATCH).createOrReplaceTempView("batch")
    _late_batch(spark, rows, LATE_CYCLES, per_cycle).createOrReplaceTempView("late_batch")
    source = median_seconds(spark, DAILY_ACTIVE_SOURCE, rounds)
    anti_join = median_seconds(spark, SILVER_ANTI_JOIN.format(bound=""), rounds)
    bounded = median_seconds(spark, _bounded_anti_join(spark, "batch"), rounds)
    bounded_late = median_seconds(spark, _bounded_anti_join(spark, "late_batch"), rounds)
    check_day = median_seconds(spark, SILVER_CHECK_DAY.format(bound=""), rounds)
    check_bounded = median_seconds(spark, SILVER_CHECK_DAY.format(bound=_batch_times(spark, "batch")), rounds)
    check_batch = median_seconds(spark, SILVER_CHECK_BATCH, rounds)
    files, size = _files(spark, table)
    return (
        f"| {label} | {files} | {rows:,} | {size / rows:.0f} | {source:.2f} | {anti_join:.2f} "
        f"| {bounded:.2f} | {bounded_late:.2f} | {check_day:.2f} | {check_bounded:.2f} | {check_batch:.2f} |"
    )


def _bounded_anti_join(spark: Any, batch: str) -> str:
    return SILVER_ANTI_JOIN.replace("batch", batch).format(bound=_batch_times(spark, batch))


def _batch_times(spark: Any, batch: str) -> str:
    """The predicate on the rows between ``batch``'s earliest and latest event times."""
    return EVENT_TIME_BOUND.format(*spark.sql(BATCH_EVENT_TIMES.format(batch)).first())


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--rows-per-cycle", type=int, default=10_000)
    parser.add_argument("--cycles", type=int, nargs="+", default=[10, 40, 120])
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args(argv)
    from ingest.core.spark.session import local_session

    with tempfile.TemporaryDirectory(prefix="day-partition-") as root:
        spark = local_session(Path(root))
        spark.sparkContext.setLogLevel("ERROR")
        rows = measure(spark, Path(root) / "silver_like", args.rows_per_cycle, args.cycles, args.rounds)
        spark.stop()
    body = [
        f"- a silver-like table, {args.rows_per_cycle:,} rows a cycle into today's partition (one file "
        f"each), reads timed against a batch of {BATCH:,} new rows; median of {args.rounds} rounds",
        "",
        "| today's partition after | files | rows | bytes a row | daily_active's source s "
        "| silver's anti-join s | the anti-join bounded by event time s "
        f"| bounded, one event {LATE_CYCLES} cycles late s "
        "| silver check, the partitions whole s | silver check, bounded by event time s "
        "| silver check, the batch s |",
        "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|",
        *rows,
    ]
    heading = "# Today's silver partition: what the per-cycle reads cost as the day fills\n"
    append_section(RESULTS, "Day partition reads (bench/day_partition_reads.py)", body, heading=heading)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
