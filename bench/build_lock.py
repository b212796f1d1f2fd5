"""What the build lock costs a dbt invocation: its table as the hook makes it, and partitioned by holder.

    python -m bench.build_lock [--rounds 6]

Every plain `dbt build` takes the build lock on-run-start and releases it on-run-end
(macros/medallion/build_lock.sql). In one warm local Spark session on a new warehouse, two copies
of the lock table are taken and released ``--rounds`` times in each shape, interleaved:

- ``take``: the MERGE, whose ``num_affected_rows`` says it wrote;
- ``release``: the DELETE of the holder's row.

One copy is as the hook makes it (no partitions), where the DELETE scans the table to find the
row and rewrites its file; the other is partitioned by ``holder``, where the DELETE of one
holder's partition rewrites no file (measured on 2026-12-07, not adopted: build_lock.md). The
first round warms up and is not counted. Medians are appended to bench/results/build_lock.md.
"""

from __future__ import annotations

import argparse
import tempfile
import time
from pathlib import Path
from typing import Any

from bench.gold_merge_shapes import interleaved_rounds, median_table
from bench.results_file import append_section
from ingest.core.settings.paths import PROJECT_DIR

RESULTS = PROJECT_DIR / "bench" / "results" / "build_lock.md"
TABLES = {"no partitions": "default.lock_flat", "partitioned by holder": "default.lock_by_holder"}
COLUMNS = "(name string, holder string, taken_at timestamp)"


def _take(lock: str) -> str:
    return (
        f"merge into {lock} as held using (select 'build' as name, 'bench' as holder, current_timestamp()"
        " as taken_at) as wanted on held.name = wanted.name when matched and held.taken_at <"
        " current_timestamp() - interval 120 minutes then update set * when not matched then insert *"
    )


def _timed(spark: Any, sql: str) -> float:
    started = time.perf_counter()
    rows = spark.sql(sql).collect()
    if sql.startswith("merge"):
        assert rows[0]["num_affected_rows"] == 1, rows  # the count the macro reads
    return time.perf_counter() - started


def run(rounds: int) -> list[str]:
    from ingest.core.spark.session import local_session

    with tempfile.TemporaryDirectory(prefix="bench-build-lock-") as warehouse:
        spark = local_session(Path(warehouse))
        for layout, lock in TABLES.items():
            partitions = " partitioned by (holder)" if "holder" in layout else ""
            spark.sql(f"create table {lock} {COLUMNS} using delta{partitions}")
        shapes = {}
        for layout, lock in TABLES.items():
            shapes[f"take, {layout}"] = _take(lock)
            shapes[f"release, {layout}"] = f"delete from {lock} where holder = 'bench'"
        times = interleaved_rounds(shapes, rounds, lambda _shape, sql: _timed(spark, sql))
        spark.stop()
    return median_table(times, rounds)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--rounds", type=int, default=6)
    args = parser.parse_args()
    append_section(
        RESULTS,
        "Build lock: taking and releasing it",
        run(args.rounds),
        heading="# The build lock's cost per dbt invocation (bench/build_lock.py)\n",
    )


if __name__ == "__main__":
    main()
