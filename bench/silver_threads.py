"""Silver's queries of one refresh cycle on one thread and on two, on a bench lakehouse.

    python -m bench.silver_threads [--games 5] [--rounds 3]

The refresh builds silver on one dbt thread: a bronze reader's mark rides in its insert's commit
through a session-wide Spark conf (macros/medallion/session_threads.sql), so two threads on the
one session could commit under each other's mark. A Spark session per dbt thread
(``SparkSession.newSession()``: its own SQL conf, the shared catalog and cache) would lift that.
Before building it, this measures what it can give: the SELECT of every silver insert the last
cycle compiled, in bench.refresh_profile's private lakehouse of ``--games`` games (run that or
bench.cycle_pairs first), read to the end and written nowhere, in one warm Spark session:

- one after the other on one thread, as the refresh runs silver;
- from two threads, each with a session of its own, taking the next query when one ends;
- from two threads on the one session (the same concurrency, for comparison).

The queries re-read the batch the last cycle already inserted, so silver's dedup drops every
row: what is timed is a query's planning, its snapshot reads and its jobs, not a commit. Medians
of ``--rounds`` rounds after a warm-up round are printed and appended to
bench/results/silver_threads.md with the machine and the date.
"""

from __future__ import annotations

import argparse
import statistics
import threading
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

from bench.refresh_profile import open_lakehouse
from bench.results_file import append_section
from ingest.core.settings.paths import PROJECT_DIR

RESULTS = PROJECT_DIR / "bench" / "results" / "silver_threads.md"
HEADING = "# Silver's queries on one thread and on two (bench/silver_threads.py)\n"


def silver_queries(root: Path) -> list[str]:
    """The SELECT of each silver insert (games and quarantine) the last cycle compiled."""
    compiled = root / "project" / "target" / "run" / "gamelake" / "models" / "silver"
    paths = [*sorted((compiled / "games").glob("silver_*.sql")), compiled / "silver_quarantine.sql"]
    inserts = [path.read_text() for path in paths if path.exists()]
    if not inserts or any(" by name" not in insert for insert in inserts):
        raise SystemExit(f"silver_threads: no compiled silver inserts under {compiled}: run a cycle first")
    return [insert.split(" by name", 1)[1] for insert in inserts]


def one_thread(spark: Any, queries: list[str]) -> None:
    for query in queries:
        spark.sql(query).collect()


def two_threads(sessions: list[Any], queries: list[str]) -> None:
    """Each session's thread takes the next query when its last one ends, as dbt's threads do."""
    pending = iter(queries)
    lock = threading.Lock()

    def work(session: Any) -> None:
        while True:
            with lock:
                query = next(pending, None)
            if query is None:
                return
            session.sql(query).collect()

    with ThreadPoolExecutor(len(sessions)) as pool:
        for done in [pool.submit(work, session) for session in sessions]:
            done.result()  # a thread's failure, raised here


def measure(spark: Any, queries: list[str], rounds: int) -> dict[str, list[float]]:
    own = [spark.newSession(), spark.newSession()]
    ways: dict[str, Callable[[], None]] = {
        "one thread (the refresh's silver)": lambda: one_thread(spark, queries),
        "two threads, a session each": lambda: two_threads(own, queries),
        "two threads, one session": lambda: two_threads([spark, spark], queries),
    }
    times: dict[str, list[float]] = {way: [] for way in ways}
    for round_ in range(rounds + 1):  # the first round warms up
        for way, run in ways.items():
            started = time.perf_counter()
            run()
            if round_:
                times[way].append(time.perf_counter() - started)
        print(f"silver_threads: round {round_} of {rounds} done", flush=True)
    return times


def report(games: int, queries: int, rounds: int, times: dict[str, list[float]]) -> list[str]:
    serial = statistics.median(next(iter(times.values())))
    lines = [
        f"- {games} games: the {queries} silver queries of the last cycle; median and minimum of "
        f"{rounds} rounds after a warm-up, the three ways in turn",
        "",
        "| way | median s | min s | against one thread |",
        "|---|---:|---:|---:|",
    ]
    for way, seconds in times.items():
        median = statistics.median(seconds)
        lines.append(f"| {way} | {median:.2f} | {min(seconds):.2f} | {median / serial:.2f} |")
    return lines


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--games", type=int, default=5)
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args(argv)
    root, _, spark = open_lakehouse(args.games)
    try:
        queries = silver_queries(root)
        times = measure(spark, queries, args.rounds)
    finally:
        spark.stop()
    lines = report(args.games, len(queries), args.rounds, times)
    title = f"Silver's queries on one thread and on two, {args.games} games"
    append_section(RESULTS, title, lines, HEADING)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
