"""dbt threads on the cluster target, measured in pairs: ``dbt build --target cluster`` with the
profile's threads at each count in turn, on one running Spark cluster.

    python -m bench.cluster_threads [--games 5] [--pairs 3] [--new 6000] [--threads 1,2]

The cluster is the one ``make cluster-up`` starts (standalone master, a worker of 2 cores, the
Thrift Server; gamelake_dev.localstack.spark_cluster), with its state in a private folder under
.cache/bench-cluster, stopped after. Bronze is made and fed through the Thrift Server with
bench.incremental's rows (60,000 events of history). One cold ``dbt build`` makes the tables and
one warm-up build per thread count follows; then each of ``--pairs`` rounds lands ``--new``
events before each build, one build per thread count, in an order that turns each round. dbt
runs in this process (dbtRunner), each build a fresh invocation as an analyst's shell runs it;
``GAMELAKE_THRIFT_THREADS`` sets the cluster profile's threads. Every build's wall time and the
ratios to the first count are printed and appended to bench/results/gold_threads.md.
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from gamelake_dev.localstack import spark_cluster

from bench.incremental import _copy_project, _games, bronze_rows_sql
from bench.results_file import append_section
from ingest.core.settings.paths import PROJECT_DIR

WORK = PROJECT_DIR / ".cache" / "bench-cluster"
RESULTS = PROJECT_DIR / "bench" / "results" / "gold_threads.md"
HISTORY, HISTORY_DAYS = 60_000, 2.0


@contextmanager
def running_cluster(state_dir: Path) -> Iterator[Any]:
    """The cluster with its state in ``state_dir``; what was started here is stopped after."""
    os.environ["GAMELAKE_SPARK_CLUSTER_DIR"] = str(state_dir)
    with spark_cluster.running(spark_cluster.ClusterConfig.from_env()) as config:
        yield config


def _thrift(config: Any, sql: str) -> None:
    from pyhive import hive

    with hive.connect(host=spark_cluster.HOST, port=config.thrift_port, auth="NOSASL") as conn:
        conn.cursor().execute(sql)


def _make_bronze(config: Any, bronze: Path, games: list[str]) -> None:
    rows = bronze_rows_sql(0, HISTORY, games, HISTORY_DAYS)
    _thrift(
        config,
        f"create table delta.`{bronze}` using delta partitioned by (event_date) "
        f"tblproperties (delta.enableChangeDataFeed = true) as {rows}",
    )


def _land(config: Any, bronze: Path, start: int, count: int, games: list[str]) -> None:
    _thrift(config, f"insert into delta.`{bronze}` {bronze_rows_sql(start, count, games, 0.01)}")


def _build(project: Path, threads: int) -> float:
    from dbt.cli.main import dbtRunner

    os.environ["GAMELAKE_THRIFT_THREADS"] = str(threads)
    where = ["--project-dir", str(project), "--profiles-dir", str(project / "profiles")]
    started = time.monotonic()
    result = dbtRunner().invoke(["build", *where, "--target", "cluster"])
    took = time.monotonic() - started
    if not result.success:
        raise SystemExit(f"dbt build --target cluster on {threads} thread(s) failed: {result.exception}")
    return took


class Lakehouse:
    """A project of ``games`` games on the cluster, fed ``new`` events before each build."""

    def __init__(self, root: Path, config: Any, games: int) -> None:
        self.config, self.games = config, _games(games)
        self.project, self.bronze = root / "project", root / "bronze" / "game_events"
        self.project.mkdir(parents=True)
        _copy_project(self.project, self.games)
        os.environ["GAMELAKE_BRONZE_PATH"] = str(self.bronze)
        os.environ["GAMELAKE_THRIFT_PORT"] = str(config.thrift_port)
        os.environ.setdefault("DBT_SEND_ANONYMOUS_USAGE_STATS", "false")
        _make_bronze(config, self.bronze, self.games)
        self.next_id = HISTORY

    def build_after(self, new: int, threads: int) -> float:
        _land(self.config, self.bronze, self.next_id, new, self.games)
        self.next_id += new
        return _build(self.project, threads)


def measure(games: int, pairs: int, new: int, counts: list[int]) -> dict[int, list[float]]:
    root = WORK / f"games-{games}"
    shutil.rmtree(root, ignore_errors=True)
    with running_cluster(root / "cluster") as config:
        lake = Lakehouse(root, config, games)
        print(f"cold build: {_build(lake.project, counts[0]):.1f} s", flush=True)
        for threads in counts:
            print(f"warm-up on {threads} thread(s): {lake.build_after(new, threads):.1f} s", flush=True)
        times: dict[int, list[float]] = {t: [] for t in counts}
        for round_ in range(pairs):
            order = counts[round_ % len(counts) :] + counts[: round_ % len(counts)]
            for threads in order:
                times[threads].append(lake.build_after(new, threads))
                print(f"round {round_ + 1}, {threads} thread(s): {times[threads][-1]:.1f} s", flush=True)
    return times


def _report(times: dict[int, list[float]], args: argparse.Namespace) -> list[str]:
    first = next(iter(times))
    lines = [
        f"- `dbt build --target cluster`, {args.games} games, {args.new:,} new events before each build, "
        f"{args.pairs} rounds after a warm-up build per count; the cluster: a worker of 2 cores, "
        "executor 1 GB, Thrift driver 1 GB",
        "",
        "| threads | builds s | median s | median ratio to " + f"{first} |",
        "|---:|---|---:|---:|",
    ]
    for threads, took in times.items():
        ratios = [t / f for t, f in zip(took, times[first], strict=True)]
        lines.append(
            f"| {threads} | {', '.join(f'{t:.1f}' for t in took)} | {statistics.median(took):.1f} "
            f"| {statistics.median(ratios):.2f} |"
        )
    return lines


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--games", type=int, default=5)
    parser.add_argument("--pairs", type=int, default=3)
    parser.add_argument("--new", type=int, default=6000)
    parser.add_argument("--threads", default="1,2", help="thread counts, the first the baseline")
    args = parser.parse_args()
    counts = [int(t) for t in args.threads.split(",")]
    times = measure(args.games, args.pairs, args.new, counts)
    append_section(RESULTS, "dbt threads on the cluster target", _report(times, args))


if __name__ == "__main__":
    main()
