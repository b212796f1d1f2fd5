"""What the all-games silver check costs, and in which Spark jobs, at 5 and at 60 games.

    python -m bench.silver_check_cost [--games 5 60] [--rounds 3]

``assert_silver_new_rows_valid`` (macros/games/new_rows_checks.sql) reads every built game's
silver rows in the event dates and the event-time span of its latest build, as one union, and
runs between a refresh cycle's silver and gold steps, so all of it is on gold's path. The 60-game
profile (bench/results/refresh_profile.md, 21:41 on 2026-11-28) found it 12.2 s of wall time with
0.62 s in its statements: the rest is its one query, run when dbt fetches its rows.

On bench.refresh_profile's private lakehouse of each games count, in one warm Spark session, the
check's SQL as its last cycle compiled it (``target/compiled``) runs ``--rounds`` times after a
warm-up (median), and in variants that each change one thing:

- ``as compiled``;
- ``dates only``: without the event-time bounds, so Delta prunes by partition and skips no file
  by its statistics;
- ``no data skipping``: as compiled, with Delta's statistics skipping off for the session;
- ``one game``: the first game's rows alone, the same checks;
- ``rows read only``: the count of the rows the games' windows hold, no check on them.

Then each variant runs once more and the Spark jobs it ran are listed from Spark's status store
(their number and time), so what is not in a job (planning, Delta's file listing on the driver)
shows as the wall time left over. Printed and appended to bench/results/refresh_profile.md.
"""

from __future__ import annotations

import re
import statistics
from pathlib import Path
from typing import Any

from bench.games_rounds import games_and_rounds
from bench.gold_daily_shapes import _job_ids, _job_seconds, _timed
from bench.refresh_profile import RESULTS, open_lakehouse
from bench.results_file import append_section

CHECK = Path("target/compiled/gamelake/data-tests/assert_silver_new_rows_valid.sql")
EVENT_TIME_BOUND = re.compile(r" and event_at between timestamp '[^']*' and timestamp '[^']*'")
SKIPPING = "spark.databricks.delta.stats.skipping"


def _one_game(sql: str) -> str:
    """The check over its first game's rows: the other games' CTEs and unions dropped."""
    head, rest = sql.split("with\n", 1)
    first = rest.split("\n),\n", 1)[0] + "\n),\n"
    union = re.search(r"new_rows as \(\n\s*select \* from (new_rows_\w+)", rest)
    assert union, "the check's shape changed: no union of the games' rows"
    tail = rest[rest.index("games as (") :]
    return f"{head}with\n{first}new_rows as (select * from {union[1]}),\n{tail}"


def _rows_read(sql: str) -> str:
    """The check's reads alone: the count of the games' rows in their windows, no check run."""
    head = sql[: sql.index("games as (")].rstrip().removesuffix(",")
    return f"{head}\nselect count(*) from new_rows"


def _variants(sql: str) -> dict[str, tuple[str, dict[str, str]]]:
    return {
        "as compiled": (sql, {}),
        "rows read only": (_rows_read(sql), {}),
        "dates only": (EVENT_TIME_BOUND.sub("", sql), {}),
        "no data skipping": (sql, {SKIPPING: "false"}),
        "one game": (_one_game(sql), {}),
    }


def _measured(spark: Any, sql: str, confs: dict[str, str], rounds: int) -> tuple[float, int, float]:
    """(median wall s, Spark jobs of one more run, seconds in them)."""
    for key, value in confs.items():
        spark.conf.set(key, value)
    try:
        _timed(spark, sql)  # warm-up
        wall = statistics.median(_timed(spark, sql) for _ in range(rounds))
        store = spark._jsc.sc().statusStore()
        before = _job_ids(store)
        _timed(spark, sql)
        seconds = _job_seconds(store, _job_ids(store) - before)
    finally:
        for key in confs:
            spark.conf.unset(key)
    return wall, len(seconds), sum(seconds)


def measure(games: int, rounds: int) -> list[str]:
    root, _, spark = open_lakehouse(games)
    compiled = root / "project" / CHECK
    if not compiled.exists():
        raise SystemExit(
            f"{compiled} is missing: run `python -m bench.refresh_profile --games {games}` first"
        )
    lines = []
    try:
        for name, (sql, confs) in _variants(compiled.read_text()).items():
            wall, jobs, in_jobs = _measured(spark, sql, confs, rounds)
            lines.append(
                f"| {games} | {name} | {wall:.2f} | {jobs} | {in_jobs:.2f} | {max(wall - in_jobs, 0):.2f} |"
            )
            print(lines[-1], flush=True)
    finally:
        spark.stop()
    return lines


def main(argv: list[str] | None = None) -> int:
    args = games_and_rounds(__doc__, argv, rounds=3)
    rows = [row for games in args.games for row in measure(games, args.rounds)]
    body = [
        f"- the check's SQL as each lakehouse's last cycle compiled it; median of {args.rounds} runs after a "
        "warm-up; the jobs of one more run from Spark's status store",
        "",
        "| games | variant | wall s | Spark jobs | in jobs s | outside jobs s |",
        "|---:|---|---:|---:|---:|---:|",
        *rows,
    ]
    append_section(RESULTS, "The all-games silver check, by variant (bench/silver_check_cost.py)", body)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
