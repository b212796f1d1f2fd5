"""Who writes the checkpoints of the tables a refresh cycle commits to, and when.

    python -m bench.checkpoint_stagger [--tables 16] [--rounds 30] [--rows 1200]

A warm refresh cycle at 5 games commits once to each of its 16 tables. Spark writes a table's
checkpoint inside the commit whose version is a multiple of ``delta.checkpointInterval`` (10),
and tables that commit together reach those versions together, so every tenth cycle pays all
16 checkpoints at once (bench/results/refresh_profile.md, 04:09: about 10 s in cycles 9, 19,
29, 39). In one warm local Spark session with the project's settings, on ``--tables`` Delta
tables shaped like silver (partitioned by event_date, change data feed on), each round inserts
``--rows`` rows into every table once, per side, the sides interleaved round by round:

- ``Spark, every 10th commit``: today's tables, Spark checkpoints inside the commits;
- ``delta-rs after the round, staggered``: Spark's interval raised to 1000, and after each round
  delta-rs checkpoints the ``ceil(tables / 10)`` tables with the most commits since their last
  checkpoint (what the refresh's upkeep would do), its time counted in the round.

Per side: the median round and the slowest, the commits that wrote a checkpoint, and a check
that a cold Spark reads every row and the change feed back from delta-rs' checkpoints. Printed and
appended to bench/results/checkpoint_stagger.md with the machine and date.
"""

from __future__ import annotations

import argparse
import math
import statistics
import tempfile
import time
from pathlib import Path
from typing import Any

from bench.results_file import append_section
from ingest.core.settings.paths import PROJECT_DIR

RESULTS = PROJECT_DIR / "bench" / "results" / "checkpoint_stagger.md"
SPARK_SIDE = "Spark, every 10th commit"
DELTA_RS_SIDE = "delta-rs after the round, staggered"
SPARK_INTERVAL = 10


def _rows(rows: int) -> str:
    return (
        f"select concat('ev-', uuid()) as event_id, concat('gamer-', id % 50) as gamer_id,"
        f" current_date() - cast(id % 3 as int) as event_date, current_timestamp() as silver_loaded_at"
        f" from range({rows})"
    )


def _create(spark: Any, table: str, interval: int) -> None:
    spark.sql(
        f"create table {table} (event_id string, gamer_id string, event_date date,"
        " silver_loaded_at timestamp) using delta partitioned by (event_date)"
        f" tblproperties (delta.enableChangeDataFeed = true, delta.checkpointInterval = {interval})"
    )


def _last_checkpoint(log: Path) -> int:
    versions = [int(p.name.split(".")[0]) for p in log.glob("*.checkpoint*.parquet")]
    return max(versions, default=0)


def _latest(log: Path) -> int:
    return max(int(p.name.split(".")[0]) for p in log.glob("*.json"))


def _checkpoint_due(logs: dict[str, Path], per_round: int) -> float:
    """delta-rs checkpoints of the ``per_round`` tables furthest from their last checkpoint."""
    from deltalake import DeltaTable

    behind = sorted(logs, key=lambda t: _last_checkpoint(logs[t]) - _latest(logs[t]))[:per_round]
    start = time.perf_counter()
    for table in behind:
        DeltaTable(str(logs[table].parent)).create_checkpoint()
    return time.perf_counter() - start


def run(tables: int, rounds: int, rows: int) -> list[str]:
    from ingest.core.spark.session import local_session

    with tempfile.TemporaryDirectory(prefix="gamelake-checkpoints-") as tmp:
        warehouse = Path(tmp) / "warehouse"
        spark = local_session(warehouse)
        spark.sparkContext.setLogLevel("ERROR")
        names = {
            side: [f"default.t{i}_{n}" for n in range(tables)]
            for i, side in enumerate((SPARK_SIDE, DELTA_RS_SIDE))
        }
        for side, group in names.items():
            for table in group:
                _create(spark, table, SPARK_INTERVAL if side == SPARK_SIDE else 1000)
        logs = {
            side: {t: warehouse / "spark" / t.split(".")[1] / "_delta_log" for t in group}
            for side, group in names.items()
        }
        insert = _rows(rows)
        times: dict[str, list[float]] = {side: [] for side in names}
        delta_rs_seconds: list[float] = []
        for round_ in range(rounds + 1):  # round 0 warms the session and is not counted
            for side, group in names.items():
                start = time.perf_counter()
                for table in group:
                    spark.sql(f"insert into {table} {insert}")
                if side == DELTA_RS_SIDE:
                    delta_rs_seconds.append(_checkpoint_due(logs[side], math.ceil(tables / SPARK_INTERVAL)))
                if round_:
                    times[side].append(time.perf_counter() - start)
        checks = _read_back(spark, names[DELTA_RS_SIDE], rows * (rounds + 1))
        checkpoints = {
            side: sum(len(list(log.glob("*.checkpoint*.parquet"))) for log in logs[side].values())
            for side in names
        }
        spark.stop()
    return _report(tables, rounds, rows, times, checkpoints, delta_rs_seconds, checks)


def _read_back(spark: Any, group: list[str], expected: int) -> list[str]:
    """Spark's count and change feed of each delta-rs-checkpointed table, read cold (from the
    newest checkpoint), against what was written."""
    spark._jvm.org.apache.spark.sql.delta.DeltaLog.clearCache()
    wrong = []
    for table in group:
        count = spark.sql(f"select count(*) from {table}").first()[0]
        fed = spark.sql(
            f"select count(*) from table_changes('{table}', 1) where _change_type = 'insert'"
        ).first()[0]
        if count != expected or fed != expected:
            wrong.append(f"{table}: {count} rows, {fed} in the change feed, expected {expected}")
    return wrong


def _report(
    tables: int,
    rounds: int,
    rows: int,
    times: dict[str, list[float]],
    checkpoints: dict[str, int],
    delta_rs_seconds: list[float],
    wrong: list[str],
) -> list[str]:
    body = [
        f"- {tables} tables shaped like silver, {rows} rows an insert, {rounds} rounds after a warm-up"
        " round, one warm session, the sides interleaved round by round",
        "",
        "| side | median round s | slowest round s | slowest / median | checkpoints written |",
        "|---|---:|---:|---:|---:|",
    ]
    for side, values in times.items():
        median, slowest = statistics.median(values), max(values)
        body.append(
            f"| {side} | {median:.2f} | {slowest:.2f} | {slowest / median:.2f}x | {checkpoints[side]} |"
        )
    body += [
        "",
        f"- delta-rs checkpoints a round: median {statistics.median(delta_rs_seconds):.3f} s,"
        f" slowest {max(delta_rs_seconds):.3f} s",
        f"- Spark reads the delta-rs-checkpointed tables back: {wrong or 'every row and change'}",
    ]
    for side, values in times.items():
        body.append(f"- {side}, every round s: {[round(v, 2) for v in values]}")
    return body


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--tables", type=int, default=16)
    parser.add_argument("--rounds", type=int, default=30)
    parser.add_argument("--rows", type=int, default=1200)
    args = parser.parse_args()
    body = run(args.tables, args.rounds, args.rows)
    append_section(
        RESULTS,
        "Checkpoints: Spark's inside the commits against delta-rs' staggered after the round",
        body,
        heading="# Who writes silver's and gold's checkpoints, and when\n",
    )


if __name__ == "__main__":
    main()
