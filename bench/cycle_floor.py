"""Spark's own floor for a refresh cycle of the product's shape, against the cycle as dbt runs it.

    python -m bench.cycle_floor [--games 5] [--rounds 2] [--new 6000]

Each game keeps its own silver table and two gold tables, and a cycle commits to each of the
three. What can such a cycle cost at least, with no dbt at all? On copies of the tables of
bench.refresh_profile's private lakehouse of ``--games`` games (their Delta logs and files copied
as they are), a pass runs, game by game, the least each model must do: one statement, one
commit, on a table whose snapshot the previous pass changed:

- silver: an INSERT of the game's share of ``--new`` rows read from its own newest day, as
  silver's dedup reads its own table;
- player_agg: a MERGE of that many players, read from the table itself, on ``gamer_id``;
- daily_active: a MERGE of its newest day, on ``event_date``.

No statement reads a table between two passes, so each pays the first read of the snapshot the
last commit made (Delta 4.4 rebuilds its file list from the log then: bench/results/snapshot_reads.md),
once a table and a cycle, as the refresh does. A pass runs on one thread, and again with the gold
statements on two threads, as the refresh builds gold (``--gold-threads 2``). Passes alternate
after one warm-up pass.

The same run first profiles one warm refresh cycle on that lakehouse (bench.refresh_profile, in
a process of its own), so the two sides are measured on the same machine, minutes apart. The
floor is printed per statement and per pass beside the profile's cycle and models, and appended
to bench/results/cycle_floor.md.
"""

from __future__ import annotations

import argparse
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections import defaultdict
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from bench.results_file import append_section
from ingest.core.settings.paths import PROJECT_DIR

RESULTS = PROJECT_DIR / "bench" / "results" / "cycle_floor.md"
HEADING = "# Spark's floor for a refresh cycle of per-game tables (bench/cycle_floor.py)\n"
WORK = PROJECT_DIR / ".cache" / "bench-profile"
KINDS = ("silver insert", "player_agg merge", "daily_active merge")


@dataclass(frozen=True)
class GameTables:
    """One game's copied tables (paths) and the newest day its silver holds."""

    game: str
    silver: Path
    player_agg: Path
    daily_active: Path
    newest_day: str


def copy_tables(warehouse: Path, scratch: Path, games: list[str]) -> list[GameTables]:
    """Each game's silver and gold table folders, copied whole (log, checkpoints, files)."""
    copied = []
    for game in games:
        paths = {}
        for name, source in (
            ("silver", warehouse / "silver.db" / f"silver_{game}"),
            ("player_agg", warehouse / "gold.db" / f"gold_{game}_player_agg"),
            ("daily_active", warehouse / "gold.db" / f"gold_{game}_daily_active"),
        ):
            paths[name] = scratch / source.name
            shutil.copytree(source, paths[name])
        days = sorted(p.name.removeprefix("event_date=") for p in paths["silver"].glob("event_date=*"))
        copied.append(GameTables(game, paths["silver"], paths["player_agg"], paths["daily_active"], days[-1]))
    return copied


def statements(tables: GameTables, rows: int) -> dict[str, str]:
    """The least each of a game's models does in a cycle: one statement, one commit."""
    silver, players, days = (
        f"delta.`{tables.silver}`",
        f"delta.`{tables.player_agg}`",
        f"delta.`{tables.daily_active}`",
    )
    return {
        "silver insert": f"insert into {silver} select * from {silver} "
        f"where event_date = date '{tables.newest_day}' limit {rows}",
        "player_agg merge": f"merge into {players} as t using (select * from {players} limit {rows}) as s "
        "on t.gamer_id = s.gamer_id when matched then update set * when not matched then insert *",
        "daily_active merge": f"merge into {days} as t using (select * from {days} "
        f"where event_date = date '{tables.newest_day}') as s "
        "on t.event_date = s.event_date when matched then update set * when not matched then insert *",
    }


def _timed(spark: Any, sql: str) -> float:
    started = time.perf_counter()
    spark.sql(sql).collect()
    return time.perf_counter() - started


def one_pass(
    spark: Any, games: list[GameTables], rows: int, gold_threads: int
) -> tuple[float, dict[str, list[float]]]:
    """Silver game by game, then gold on ``gold_threads``: the pass's wall time and each statement's."""
    took: dict[str, list[float]] = defaultdict(list)
    started = time.perf_counter()
    for tables in games:
        took["silver insert"].append(_timed(spark, statements(tables, rows)["silver insert"]))
    gold = [(kind, statements(t, rows)[kind]) for t in games for kind in KINDS[1:]]

    def run(job: tuple[str, str]) -> tuple[str, float]:
        return job[0], _timed(spark, job[1])

    with ThreadPoolExecutor(gold_threads) as pool:
        for kind, seconds in pool.map(run, gold):
            took[kind].append(seconds)
    return time.perf_counter() - started, took


def measure_floor(games_count: int, rounds: int, new: int) -> dict[str, Any]:
    from bench.refresh_profile import open_lakehouse

    root, state, spark = open_lakehouse(games_count)
    games = state["games"]
    rows = max(1, new // len(games))
    passes: dict[int, list[float]] = defaultdict(list)
    per_statement: dict[str, list[float]] = defaultdict(list)
    with tempfile.TemporaryDirectory(prefix="cycle-floor-", dir=WORK) as scratch:
        copied = copy_tables(root / "warehouse" / "spark", Path(scratch), games)
        one_pass(spark, copied, rows, 1)  # warm-up: every table's snapshot read once
        for _ in range(rounds):
            for threads in (1, 2):
                wall, took = one_pass(spark, copied, rows, threads)
                passes[threads].append(wall)
                if threads == 1:
                    for kind, values in took.items():
                        per_statement[kind] += values
        spark.stop()
    return {"games": len(games), "rows": rows, "passes": passes, "per_statement": per_statement}


PROFILE_CYCLE = re.compile(r"warm refresh cycle ([\d.]+) s")
PROFILE_MEDIAN = re.compile(r"median model ([\d.]+) s")
MODEL_ROW = re.compile(r"^\| (silver_\w+|gold_\w+_(?:player_agg|daily_active)) \| ([\d.]+) \|", re.M)


def profile_cycle(games_count: int, new: int) -> dict[str, Any]:
    """One warm refresh cycle profiled by bench.refresh_profile, in a process of its own."""
    out = WORK / f"report-{games_count}-floor.md"
    command = [sys.executable, "-m", "bench.refresh_profile", "--only", str(games_count), "--new", str(new)]
    subprocess.run([*command, "--out", str(out)], check=True, cwd=PROJECT_DIR)
    report = out.read_text()
    walls: dict[str, list[float]] = defaultdict(list)
    per_model = report[report.index("Per model:") : report.index("Tests:")]
    for model, wall in MODEL_ROW.findall(per_model):
        if model != "silver_quarantine":
            walls[_kind_of(model)].append(float(wall))
    cycle, median = PROFILE_CYCLE.search(report), PROFILE_MEDIAN.search(report)
    if cycle is None or median is None:
        raise SystemExit(f"cycle_floor: no cycle or median model in {out}")
    return {"cycle": float(cycle.group(1)), "median model": float(median.group(1)), "walls": walls}


def _kind_of(model: str) -> str:
    if model.startswith("silver_"):
        return "silver insert"
    return "player_agg merge" if model.endswith("_player_agg") else "daily_active merge"


def _listed(seconds: list[float]) -> str:
    return ", ".join(f"{value:.1f}" for value in seconds)


def report(floor: dict[str, Any], profiled: dict[str, Any], rounds: int) -> list[str]:
    passes, per_statement = floor["passes"], floor["per_statement"]
    one, two = statistics.median(passes[1]), statistics.median(passes[2])
    every = [v for values in per_statement.values() for v in values]
    lines = [
        f"- {floor['games']} games, {floor['rows']:,} rows a game a cycle; {rounds} passes of each kind "
        "after a warm-up pass",
        "",
        "| model kind | refresh cycle, dbt: median model wall s | floor: median statement s "
        "| min s | max s |",
        "|---|---:|---:|---:|---:|",
    ]
    for kind in KINDS:
        values = per_statement[kind]
        lines.append(
            f"| {kind} | {statistics.median(profiled['walls'][kind]):.2f} | {statistics.median(values):.2f} "
            f"| {min(values):.2f} | {max(values):.2f} |"
        )
    lines += [
        "",
        f"- median model: refresh cycle {profiled['median model']:.2f} s, "
        f"floor {statistics.median(every):.2f} s",
        f"- a cycle: refresh (bench.refresh_profile, one dbt thread) {profiled['cycle']:.1f} s; "
        f"floor, the three statements a game on one thread {one:.1f} s ({_listed(passes[1])}), "
        f"gold on two threads {two:.1f} s ({_listed(passes[2])})",
        f"- the refresh cycle against the one-thread floor: {profiled['cycle'] / one:.2f}x",
    ]
    return lines


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--games", type=int, default=5)
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--new", type=int, default=6000)
    args = parser.parse_args(argv)
    if args.rounds < 1:
        parser.error("--rounds must be 1 or more")
    profiled = profile_cycle(args.games, args.new)
    floor = measure_floor(args.games, args.rounds, args.new)
    append_section(
        RESULTS, f"Floor and refresh cycle, {args.games} games", report(floor, profiled, args.rounds), HEADING
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
