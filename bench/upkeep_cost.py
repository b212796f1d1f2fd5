"""What each step of silver's and gold's upkeep costs, Spark's way and delta-rs' way: the profile
behind ingest/ops/lakehouse_upkeep.py.

    python -m bench.upkeep_cost [--files 30] [--rows-per-file 10000] [--rounds 3]

In one warm local Spark session: a silver-like table takes ``--files`` appends into one day's
partition (a file a cycle, as the refresh leaves them), and a gold-like table is replaced
``--files`` times (a file a MERGE, as gold's leaves them). Timed, median of ``--rounds`` where
a step can be repeated:

- finding what is due: delta-rs reading the silver table's log (``due_compaction``);
- Spark OPTIMIZE packing the due partition, once; then Spark OPTIMIZE with nothing to pack;
- Spark VACUUM (dry run) listing with Spark's default parallelism (10,000 tasks), and with 4;
- delta-rs' vacuum (dry run, and the real one, once) of the gold-like table.

Printed and appended to bench/results/upkeep_cost.md with the machine and date.
"""

from __future__ import annotations

import argparse
import statistics
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from deltalake import DeltaTable

from bench.day_partition_reads import silver_like_rows
from bench.results_file import append_section
from ingest.core.settings.paths import PROJECT_DIR
from ingest.ops.lakehouse_upkeep import compact, due_compaction, vacuum

RESULTS = PROJECT_DIR / "bench" / "results" / "upkeep_cost.md"
LISTING = "spark.sql.sources.parallelPartitionDiscovery.parallelism"


def _seconds(step: Callable[[], Any], rounds: int = 1) -> float:
    times = []
    for _ in range(rounds):
        started = time.perf_counter()
        step()
        times.append(time.perf_counter() - started)
    return statistics.median(times)


def _append_files(spark: Any, silver: Path, first_file: int, files: int, rows: int) -> None:
    for n in range(first_file, first_file + files):
        batch = silver_like_rows(spark, n * rows, rows).coalesce(1).write.format("delta")
        batch.mode("append").partitionBy("event_date").save(str(silver))


def _compaction_seconds(spark: Any, silver: Path, files: int) -> float:
    due = due_compaction(f"delta.`{silver}`", DeltaTable(str(silver)), files)
    assert due is not None, "the silver-like partition should be due"
    return _seconds(lambda: compact(spark, due))


def measure(spark: Any, root: Path, files: int, rows: int, rounds: int) -> list[tuple[str, float]]:
    silver, gold = root / "silver_like", root / "gold_like"
    _append_files(spark, silver, 0, files, rows)
    for _ in range(files):  # a gold-like table, its whole file replaced each time
        silver_like_rows(spark, 0, rows).coalesce(1).write.format("delta").mode("overwrite").save(str(gold))
    spark.conf.set("spark.databricks.delta.retentionDurationCheck.enabled", "false")
    steps = [
        (
            "delta-rs: what is due (silver-like log)",
            _seconds(lambda: due_compaction("t", DeltaTable(str(silver)), files), rounds),
        ),
        (
            f"Spark OPTIMIZE packing {files} files into 1, the session's first",
            _compaction_seconds(spark, silver, files),
        ),
    ]
    _append_files(spark, silver, files, files, rows)
    steps.append(
        (f"the same again: {files} new files and the first's", _compaction_seconds(spark, silver, files))
    )
    optimize = lambda: spark.sql(f"optimize delta.`{silver}`").collect()  # noqa: E731
    steps.append(("Spark OPTIMIZE, nothing to pack", _seconds(optimize, rounds)))
    dry_run = lambda: spark.sql(f"vacuum delta.`{gold}` retain 0 hours dry run").collect()  # noqa: E731
    steps.append(("Spark VACUUM dry run, 10,000 listing tasks (default)", _seconds(dry_run)))
    spark.conf.set(LISTING, "4")
    steps.append(("Spark VACUUM dry run, 4 listing tasks", _seconds(dry_run, rounds)))
    spark.conf.unset(LISTING)
    table = DeltaTable(str(gold))
    expired = lambda: table.vacuum(retention_hours=0, dry_run=True, enforce_retention_duration=False)  # noqa: E731
    steps.append(("delta-rs vacuum dry run", _seconds(expired, rounds)))
    steps.append(
        (f"delta-rs vacuum, {len(expired())} files", _seconds(lambda: vacuum(DeltaTable(str(gold)), 0)))
    )
    return steps


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--files", type=int, default=30)
    parser.add_argument("--rows-per-file", type=int, default=10_000)
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args(argv)
    from ingest.core.spark.session import local_session

    with tempfile.TemporaryDirectory(prefix="upkeep-cost-") as root:
        spark = local_session(Path(root))
        spark.sparkContext.setLogLevel("ERROR")
        spark.sql("select 1").collect()  # the session up before anything is timed
        steps = measure(spark, Path(root), args.files, args.rows_per_file, args.rounds)
        spark.stop()
    body = [
        f"- {args.files} files of {args.rows_per_file:,} rows: a silver-like day partition, and a gold-like "
        f"table replaced {args.files} times; median of {args.rounds} rounds where a step repeats",
        "",
        "| step | seconds |",
        "|---|---:|",
        *(f"| {label} | {seconds:.3f} |" for label, seconds in steps),
    ]
    heading = "# Upkeep of silver and gold: what each step costs\n"
    append_section(RESULTS, "Upkeep cost (bench/upkeep_cost.py)", body, heading=heading)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
