"""What the first read of a Delta table's new snapshot costs, and what it saves the next commit.

    python -m bench.snapshot_reads [--rounds 10]

A refresh cycle commits to each built table (the gold MERGE), and the all-games checks then read
every such table at its new version. In one warm local Spark session, on a small Delta table
like a game's gold, each round times:

- a one-key MERGE, as the gold model commits;
- the first read of the snapshot it made (what a check pays);
- the same read again (the snapshot's state now cached);

then, the same number of MERGEs back to back, with no read between them. Then, on a table like a
game's silver (insert-only, its change data feed on, partitioned by day), each round inserts and
times the first and second filtered read, with nothing between, with a read of the insert's change
feed between (how gold reads silver), and with a read `version as of` the new version between (how
daily_active's recount read it until stop 55). The first read's extra
cost is Delta rebuilding the new snapshot's file list from its log; the back-to-back MERGEs show
how much of it the next MERGE pays when no read came first. The last commit's checksum (.crc)
file is opened to show whether it lists the table's files. Medians of all rounds after the
first two (warm-up) are printed and appended to bench/results/snapshot_reads.md with the machine
and date.
"""

from __future__ import annotations

import argparse
import json
import statistics
import tempfile
import time
from pathlib import Path
from typing import Any

from bench.results_file import append_section
from ingest.core.settings.paths import PROJECT_DIR

RESULTS = PROJECT_DIR / "bench" / "results" / "snapshot_reads.md"
WARM_UP = 2


def _timed(spark: Any, sql: str) -> float:
    started = time.perf_counter()
    spark.sql(sql).collect()
    return time.perf_counter() - started


def _merge(spark: Any, i: int) -> float:
    return _timed(
        spark,
        f"merge into t using (select 'k{i % 3}' as k, {i} as n) s on t.k = s.k"
        " when matched then update set n = s.n when not matched then insert *",
    )


def _read(spark: Any) -> float:
    return _timed(spark, "select count(*) from t where k is null")


def _checksum(table: Path) -> str:
    newest = max((table / "_delta_log").glob("*.crc"))
    fields = json.loads(newest.read_text())
    files = fields.get("allFiles")
    listed = f"lists its {len(files)} files" if files is not None else "lists no files"
    return f"{newest.name}: numFiles {fields.get('numFiles')}, {listed}"


def measure(spark: Any, rounds: int) -> dict[str, list[float]]:
    spark.sql("create table t (k string, n bigint) using delta")
    spark.sql("insert into t values ('a', 1)")
    times: dict[str, list[float]] = {"merge, then reads": [], "first read": [], "same read again": []}
    for i in range(rounds):
        times["merge, then reads"].append(_merge(spark, i))
        times["first read"].append(_read(spark))
        times["same read again"].append(_read(spark))
    times["merge, back to back"] = [_merge(spark, i) for i in range(rounds)]
    return {name: values[WARM_UP:] for name, values in times.items()}


def measure_change_feed(spark: Any, rounds: int) -> dict[str, list[float]]:
    """First and second filtered reads after an insert, with each kind of read between."""
    spark.sql(
        "create table f (n bigint, event_date date) using delta partitioned by (event_date)"
        " tblproperties (delta.enableChangeDataFeed = true)"
    )
    between = {
        "nothing": None,
        "the change feed": "select count(*) from table_changes('f', {v}, {v})",
        "version as of the new version": (
            "select count(*) from f version as of {v} where event_date = current_date()"
        ),
    }
    times: dict[str, list[float]] = {}
    for name, read in between.items():
        for i in range(rounds):
            spark.sql(f"insert into f select id, current_date() from range({i * 100}, {i * 100 + 100})")
            if read is not None:
                version = spark.sql("describe history f limit 1").collect()[0]["version"]
                spark.sql(read.format(v=version)).collect()
            times.setdefault(f"after an insert, {name} between: first read", []).append(_read_day(spark))
            times.setdefault(f"after an insert, {name} between: same read again", []).append(_read_day(spark))
    return {name: values[WARM_UP:] for name, values in times.items()}


def _read_day(spark: Any) -> float:
    return _timed(spark, "select count(*) from f where event_date = current_date() and n >= 0")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--rounds", type=int, default=10)
    args = parser.parse_args(argv)
    if args.rounds <= WARM_UP:
        parser.error(f"--rounds must be more than the {WARM_UP} warm-up rounds")
    from ingest.core.spark.session import local_session

    with tempfile.TemporaryDirectory(prefix="snapshot-reads-") as root:
        spark = local_session(Path(root))
        spark.sparkContext.setLogLevel("ERROR")
        times = measure(spark, args.rounds)
        times |= measure_change_feed(spark, args.rounds)
        checksum = _checksum(Path(str(spark.conf.get("spark.sql.warehouse.dir")).removeprefix("file:")) / "t")
        version = spark.version
        spark.stop()
    median = {name: statistics.median(values) for name, values in times.items()}
    body = [
        f"- Spark {version}, Delta from ingest/core/spark/session.py; local[2]; "
        f"{args.rounds - WARM_UP} rounds after {WARM_UP} warm-up",
        "",
        "| step | median s | min s | max s |",
        "|---|---:|---:|---:|",
        *(f"| {name} | {median[name]:.2f} | {min(v):.2f} | {max(v):.2f} |" for name, v in times.items()),
        "",
        f"- the first read's extra over the same read again: "
        f"{median['first read'] - median['same read again']:.2f} s",
        f"- what a read before it saves the next MERGE: "
        f"{median['merge, back to back'] - median['merge, then reads']:.2f} s",
        f"- the last checksum file: {checksum}",
    ]
    heading = "# A new snapshot's first read: its cost, and what it saves the next commit\n"
    append_section(RESULTS, "Snapshot reads (bench/snapshot_reads.py)", body, heading=heading)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
