"""One game's two gold queries under Spark settings, alone and two at once, on a bench lakehouse.

    python -m bench.gold_select_confs [--games 5] [--game kart_legends] [--rounds 6]

The refresh's gold step runs each game's player_agg and daily_active inserts interpreted, on 2
dbt threads (ingest/ops/refresh_command.py). This times the query of each (the SELECT of the
insert the last refresh cycle compiled, in bench.refresh_profile's private lakehouse of
``--games`` games: run that or bench.cycle_pairs first), read to the end and written nowhere, in
one warm Spark session, under each of ``VARIANTS``:

- alone: one query after the other, each timed;
- together: the two queries started at once from two Python threads, as the refresh's two dbt
  threads run a game's two gold models, the pair's wall time;
- each of them again with Delta's table cache cleared first (``DeltaLog.clearCache()``): in a
  refresh cycle every statement reads tables at versions no statement read before, so its Delta
  log and snapshot work is not cached as a query repeated on the same versions finds it.

daily_active reads player_agg as it stood before the cycle, at the version the refresh handed
over, which was player_agg's latest then; the bench reads it at its latest version now, so both
sides read a cached snapshot. Medians and minimums of ``--rounds`` rounds after a warm-up round
are printed and appended to bench/results/gold_select_confs.md with the machine and the date.
"""

from __future__ import annotations

import argparse
import re
import statistics
import threading
import time
from pathlib import Path
from typing import Any

from deltalake import DeltaTable

from bench.refresh_profile import open_lakehouse
from bench.results_file import append_section
from ingest.core.settings.paths import PROJECT_DIR
from ingest.ops.codegen_mode import INTERPRETED

RESULTS = PROJECT_DIR / "bench" / "results" / "gold_select_confs.md"
SHUFFLE_PARTITIONS = "spark.sql.shuffle.partitions"
VARIANTS = {
    "compiled, 4 shuffle partitions (the session's)": {},
    "interpreted, 4 shuffle partitions (the refresh's gold step)": INTERPRETED,
    "interpreted, 1 shuffle partition": {**INTERPRETED, SHUFFLE_PARTITIONS: "1"},
    "interpreted, no broadcast join": {**INTERPRETED, "spark.sql.autoBroadcastJoinThreshold": "-1"},
}


def gold_queries(root: Path, game: str) -> dict[str, str]:
    """The SELECT of each gold insert the last cycle compiled for ``game``, player_agg read at its
    latest version."""
    compiled = root / "project" / "target" / "run" / "gamelake" / "models" / "gold" / "games"
    queries = {}
    for model in ("player_agg", "daily_active"):
        path = compiled / f"gold_{game}_{model}.sql"
        if not path.exists():
            raise SystemExit(f"gold_select_confs: no {path}: run bench.refresh_profile --games N first")
        insert = path.read_text()
        if " by name" not in insert:
            raise SystemExit(f"gold_select_confs: {path} is not an insert ... by name (an unchanged model?)")
        queries[model] = insert.split(" by name", 1)[1]
    latest = DeltaTable(str(root / "warehouse" / "spark" / "gold.db" / f"gold_{game}_player_agg")).version()
    queries["daily_active"] = re.sub(
        rf"(gold\.gold_{game}_player_agg version as of )\d+", rf"\g<1>{latest}", queries["daily_active"]
    )
    return queries


def _alone(spark: Any, query: str) -> float:
    started = time.perf_counter()
    spark.sql(query).collect()
    return time.perf_counter() - started


def _together(spark: Any, queries: list[str]) -> float:
    failures: list[BaseException] = []

    def run(query: str) -> None:
        try:
            spark.sql(query).collect()
        except BaseException as error:
            failures.append(error)

    threads = [threading.Thread(target=run, args=(query,)) for query in queries]
    started = time.perf_counter()
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    if failures:
        raise failures[0]
    return time.perf_counter() - started


def _cases(spark: Any, queries: dict[str, str]) -> dict[str, float]:
    """Each model's query alone and both together, with Delta's cache as it stands and cleared."""
    delta_log = spark._jvm.org.apache.spark.sql.delta.DeltaLog
    taken = {}
    for cache in ("cached", "cleared"):
        for model, query in queries.items():
            if cache == "cleared":
                delta_log.clearCache()
            taken[f"{model} alone, Delta cache {cache}"] = _alone(spark, query)
        if cache == "cleared":
            delta_log.clearCache()
        taken[f"both together, Delta cache {cache}"] = _together(spark, list(queries.values()))
    return taken


def measure(spark: Any, queries: dict[str, str], rounds: int) -> dict[tuple[str, str], list[float]]:
    """Each variant's times per case (a model alone, or both together), rounds interleaved."""
    times: dict[tuple[str, str], list[float]] = {}
    for round_ in range(rounds + 1):  # the first round warms up
        for variant, confs in VARIANTS.items():
            for key, value in confs.items():
                spark.conf.set(key, value)
            try:
                taken = _cases(spark, queries)
            finally:
                for key in confs:
                    spark.conf.unset(key)
            if round_:
                for case, seconds in taken.items():
                    times.setdefault((variant, case), []).append(seconds)
        print(f"gold_select_confs: round {round_} of {rounds} done", flush=True)
    return times


def report(game: str, games: int, rounds: int, times: dict[tuple[str, str], list[float]]) -> list[str]:
    lines = [
        f"- game {game} of bench.refresh_profile's {games}-game lakehouse; its gold queries as the last "
        f"cycle compiled them; median and minimum of {rounds} rounds after a warm-up, variants interleaved",
        "",
        "| variant | query | median s | min s |",
        "|---|---|---:|---:|",
    ]
    for (variant, case), seconds in times.items():
        lines.append(f"| {variant} | {case} | {statistics.median(seconds):.3f} | {min(seconds):.3f} |")
    return lines


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--games", type=int, default=5)
    parser.add_argument("--game", default="kart_legends")
    parser.add_argument("--rounds", type=int, default=6)
    args = parser.parse_args(argv)
    root, _, spark = open_lakehouse(args.games)
    try:
        queries = gold_queries(root, args.game)
        times = measure(spark, queries, args.rounds)
    finally:
        spark.stop()
    heading = (
        "# One game's gold queries under Spark settings, alone and together (bench/gold_select_confs.py)\n"
    )
    append_section(
        RESULTS, "Gold queries by setting", report(args.game, args.games, args.rounds, times), heading
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
