"""How a silver insert's cost grows with the files of its partition, with and without compaction.

    python -m bench.silver_file_growth [--cycles 90] [--rows 1200] [--min-files 16]

A silver model deduplicates each batch against the event_date partitions it touches (a left
anti join on event_id, macros/medallion/silver_game_events.sql). A continuous refresh adds one
small file to today's partition every cycle, so without compaction the anti join reads one more
file each cycle, all day. In one warm local Spark session with the project's settings, two
tables shaped like silver (partitioned by event_date, change data feed on) take the same
``--cycles`` batches of ``--rows`` new events, interleaved:

- ``no compaction``: Delta's defaults;
- ``auto compaction``: ``delta.autoOptimize.autoCompact`` on, and the session's
  ``autoCompact.minNumFiles`` set to ``--min-files`` (what silver's models set).

Each cycle's insert is timed, compaction included when it runs. The medians of the first and
last tenth of the cycles, the p90 and the worst, and the files left in the partition, are
printed and appended to bench/results/silver_file_growth.md with the machine and date.
"""

from __future__ import annotations

import argparse
import statistics
import tempfile
import time
from pathlib import Path
from typing import Any

from bench.results_file import append_section
from ingest.core.settings.paths import PROJECT_DIR

RESULTS = PROJECT_DIR / "bench" / "results" / "silver_file_growth.md"
MIN_FILES_CONF = "spark.databricks.delta.autoCompact.minNumFiles"
TABLES = {"no compaction": "default.silver_plain", "auto compaction": "default.silver_compacted"}


def _create(spark: Any, table: str, compact: bool) -> None:
    auto = ", delta.autoOptimize.autoCompact = true" if compact else ""
    spark.sql(
        f"create table {table} (event_id string, gamer_id string, event_type string,"
        " event_at timestamp, event_date date, silver_loaded_at timestamp) using delta"
        f" partitioned by (event_date) tblproperties (delta.enableChangeDataFeed = true{auto})"
    )


def _insert(spark: Any, table: str, cycle: int, rows: int) -> float:
    """One silver-shaped insert: a batch of new events, anti-joined on today's partition."""
    start = time.perf_counter()
    spark.sql(f"""
        insert into {table}
        with batch as (
            select concat('ev-{cycle}-', id) as event_id, concat('gamer-', id % 500) as gamer_id,
                   'session_start' as event_type, current_timestamp() as event_at,
                   current_date() as event_date
            from range({rows})
        )
        select batch.*, current_timestamp() as silver_loaded_at
        from batch
        left anti join (
            select event_id, event_date from {table} where event_date in (current_date())
        ) as loaded
            on batch.event_id = loaded.event_id and batch.event_date = loaded.event_date
    """)
    return time.perf_counter() - start


def _files(spark: Any, table: str) -> int:
    return int(spark.sql(f"describe detail {table}").first()["numFiles"])


def _summary(name: str, times: list[float], files: int) -> str:
    tenth = max(1, len(times) // 10)
    ordered = sorted(times)
    return (
        f"| {name} | {statistics.median(times[:tenth]):.3f} | {statistics.median(times[-tenth:]):.3f}"
        f" | {statistics.median(times):.3f} | {ordered[int(0.9 * (len(ordered) - 1))]:.3f}"
        f" | {ordered[-1]:.3f} | {files} |"
    )


def run(cycles: int, rows: int, min_files: int) -> list[str]:
    from ingest.core.spark.session import local_session

    with tempfile.TemporaryDirectory(prefix="gamelake-files-") as tmp:
        spark = local_session(Path(tmp) / "warehouse")
        spark.sparkContext.setLogLevel("ERROR")
        spark.conf.set(MIN_FILES_CONF, str(min_files))
        for name, table in TABLES.items():
            _create(spark, table, compact=name == "auto compaction")
        times: dict[str, list[float]] = {name: [] for name in TABLES}
        for cycle in range(cycles + 1):  # cycle 0 warms the session and is not counted
            for name, table in TABLES.items():
                seconds = _insert(spark, table, cycle, rows)
                if cycle:
                    times[name].append(seconds)
            if cycle % 10 == 0:
                print(
                    f"cycle {cycle}/{cycles}: "
                    + ", ".join(f"{n} {t[-1]:.2f} s" for n, t in times.items() if t)
                )
        files = {name: _files(spark, table) for name, table in TABLES.items()}
        counts = {name: spark.table(table).count() for name, table in TABLES.items()}
        spark.stop()
    assert set(counts.values()) == {(cycles + 1) * rows}, f"rows lost or doubled: {counts}"
    tenth = max(1, cycles // 10)
    return [
        f"- {cycles} cycles of {rows} new events into today's partition, after a warm-up cycle;"
        f" one warm session; autoCompact.minNumFiles {min_files}",
        f"- both tables hold {(cycles + 1) * rows} rows at the end: nothing lost or doubled",
        "",
        f"| table | median s, first {tenth} cycles | median s, last {tenth} | median s | p90 s | worst s"
        " | files at the end |",
        "|---|---:|---:|---:|---:|---:|---:|",
        *(_summary(name, times[name], files[name]) for name in TABLES),
    ]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--cycles", type=int, default=90)
    parser.add_argument("--rows", type=int, default=1200)
    parser.add_argument("--min-files", type=int, default=16)
    args = parser.parse_args()
    body = run(args.cycles, args.rows, args.min_files)
    append_section(
        RESULTS,
        "Silver insert against the files of its partition",
        body,
        heading="# A silver insert's cost against the files of today's partition\n",
    )


if __name__ == "__main__":
    main()
