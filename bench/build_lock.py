"""What the build lock costs a dbt invocation: taking it with and without reading it back.

    python -m bench.build_lock [--rounds 6]

Every `dbt build` (and each of a refresh cycle's two invocations) takes the build lock on-run-start
and releases it on-run-end (macros/medallion/build_lock.sql). On the 5-game lakehouse
bench.refresh_profile keeps, in one warm Spark session, a copy of the lock table is taken and
released ``--rounds`` times in each shape, interleaved:

- ``take, then read the holder back``: the MERGE, then ``select holder`` (as before stop 40);
- ``take, the MERGE's count read``: the MERGE alone, its ``num_affected_rows`` says it wrote;
- ``release``: the DELETE of the holder's row.

The first round warms up and is not counted. Medians are appended to bench/results/build_lock.md.
"""

from __future__ import annotations

import argparse
import time
from typing import Any

from bench.gold_merge_shapes import interleaved_rounds, median_table, open_lakehouse
from bench.results_file import append_section
from ingest.core.settings.paths import PROJECT_DIR

RESULTS = PROJECT_DIR / "bench" / "results" / "build_lock.md"
LOCK = "default.bench_build_lock"
TAKE = (
    f"merge into {LOCK} as held using (select 'build' as name, 'bench' as holder, current_timestamp()"
    " as taken_at) as wanted on held.name = wanted.name when matched and held.taken_at <"
    " current_timestamp() - interval 120 minutes then update set * when not matched then insert *"
)
READ_BACK = f"select holder, cast(taken_at as string) from {LOCK} where name = 'build'"
RELEASE = f"delete from {LOCK} where holder = 'bench'"


def _timed(spark: Any, statements: list[str]) -> float:
    started = time.perf_counter()
    for sql in statements:
        rows = spark.sql(sql).collect()
    if statements[0] == TAKE and statements[-1] == TAKE:
        assert rows[0]["num_affected_rows"] == 1, rows  # the count the macro reads
    return time.perf_counter() - started


def run(rounds: int) -> list[str]:
    spark, _ = open_lakehouse("silver.silver_space_raiders")
    spark.sql(f"create or replace table {LOCK} (name string, holder string, taken_at timestamp) using delta")
    shapes = {
        "take, then read the holder back": [TAKE, READ_BACK],
        "release (after the first)": [RELEASE],
        "take, the MERGE's count read": [TAKE],
        "release (after the second)": [RELEASE],
    }
    times = interleaved_rounds(shapes, rounds, lambda _shape, statements: _timed(spark, statements))
    spark.sql(f"drop table {LOCK}")
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
