"""The all-games checks in one pass over each game's table, against the two passes they made before.

    python -m bench.check_passes [--games 5 60] [--rounds 5]

``assert_silver_new_rows_valid`` and ``assert_gold_rows_valid`` (macros/games/new_rows_checks.sql)
read a union of every built game's table. Until 2026-12-07 each read that union twice: a group-by
for the key's uniqueness, beside an anti join against the seed for each row's rules. Delta lists a
table's files for every scan of it in the plan (a Spark job each, "Delta: Filtering files for
query"), so each table's files were listed twice. Now the check groups once and takes the rows'
failures from the groups.

On bench.refresh_profile's private lakehouse of each games count, in one warm Spark session: the
checks are compiled as the repo's macros now write them (``dbt compile``; the silver check's window
is its tables' latest builds), and each runs in that form and with the former two-pass tail
(``TWO_PASSES``) in its place, in turns, after a warm-up of both. Printed: the median wall time of
``--rounds`` runs of each, and the Spark jobs of one of them. Appended to
bench/results/check_passes.md.
"""

from __future__ import annotations

import re
import statistics
from pathlib import Path
from typing import Any

from bench.games_rounds import games_and_rounds
from bench.gold_daily_shapes import _job_ids, _timed
from bench.incremental import run_dbt
from bench.refresh_profile import open_lakehouse
from bench.results_file import append_section
from ingest.core.settings.paths import PROJECT_DIR

RESULTS = PROJECT_DIR / "bench" / "results" / "check_passes.md"
HEADING = "# The all-games checks: one pass over each table against two (bench/check_passes.py)\n"
CHECKS = ("assert_silver_new_rows_valid", "assert_gold_rows_valid")
COMPILED = Path("target/compiled/gamelake/data-tests")
TAIL_START = "games as ("
EVENT_TYPES = re.compile(r"event_type in \(('[^)]*')\)")

# The checks' queries after their rows' union, as the macros wrote them before 2026-12-07.
TWO_PASSES = {
    "assert_silver_new_rows_valid": """games as (
    select game_slug from reference.games
),
failures as (
    select model_game, 'event_id is unique' as failed_check, event_id as failed_value
    from new_rows group by model_game, event_id having count(*) > 1
    union all
    select new_rows.model_game,
        case when new_rows.event_id is null then 'event_id is not null'
            when new_rows.gamer_id is null then 'gamer_id is not null'
            when new_rows.event_type is null or new_rows.event_type not in ({types})
                then 'event_type is a known event type'
            else 'game_slug is in the games seed' end as failed_check,
        coalesce(new_rows.event_id, new_rows.event_type, new_rows.game_slug) as failed_value
    from new_rows left anti join games
        on new_rows.game_slug = games.game_slug and new_rows.event_id is not null
            and new_rows.gamer_id is not null and new_rows.event_type in ({types})
)
select * from failures
""",
    "assert_gold_rows_valid": """games as (
    select game_slug from reference.games
),
failures as (
    select model_game, gold_table || ' key is unique' as failed_check, row_key as failed_value
    from gold_keys group by model_game, gold_table, row_key having count(*) > 1
    union all
    select gold_keys.model_game,
        case when gold_keys.row_key is null then gold_keys.gold_table || ' key is not null'
            else 'game_slug is in the games seed' end as failed_check,
        gold_keys.game_slug as failed_value
    from gold_keys left anti join games
        on gold_keys.game_slug = games.game_slug and gold_keys.row_key is not null
)
select * from failures
""",
}


def two_passes(check: str, one_pass: str) -> str:
    """``one_pass`` (the check as compiled now) with its failures computed the former way."""
    types = EVENT_TYPES.search(one_pass)
    tail = TWO_PASSES[check].format(types=types[1] if types else "")
    return one_pass[: one_pass.index(TAIL_START)] + tail


def _jobs_of_one_run(spark: Any, sql: str) -> int:
    store = spark._jsc.sc().statusStore()
    before = _job_ids(store)
    _timed(spark, sql)
    return len(_job_ids(store) - before)


def _compared(spark: Any, check: str, compiled: str, rounds: int) -> str:
    """The check's row of the table: both forms' median times, their ratio, their Spark jobs."""
    forms = {"one pass": compiled, "two passes": two_passes(check, compiled)}
    times: dict[str, list[float]] = {form: [] for form in forms}
    for sql in forms.values():
        _timed(spark, sql)  # warm-up
    for _ in range(rounds):
        for form, sql in forms.items():
            times[form].append(_timed(spark, sql))
    one, two = (statistics.median(times[form]) for form in forms)
    jobs = [_jobs_of_one_run(spark, sql) for sql in forms.values()]
    return f"{check} | {one:.2f} | {two:.2f} | {one / two:.2f} | {jobs[0]} / {jobs[1]}"


def measure(games: int, rounds: int) -> list[str]:
    """A table row per check on the lakehouse of ``games`` games, each printed as it is measured."""
    root, _, spark = open_lakehouse(games)
    project = root / "project"
    rows = []
    try:
        run_dbt(project, "compile", "--select", *CHECKS)  # exits on a failure
        for check in CHECKS:
            compiled = (project / COMPILED / f"{check}.sql").read_text()
            rows.append(f"| {games} | {_compared(spark, check, compiled, rounds)} |")
            print(rows[-1], flush=True)
    finally:
        spark.stop()
    return rows


TABLE_HEAD = [
    "| games | check | one pass s | two passes s | ratio | Spark jobs (one / two) |",
    "|---:|---|---:|---:|---:|---|",
]


def main(argv: list[str] | None = None) -> int:
    args = games_and_rounds(__doc__, argv, rounds=5)
    rows = [row for games in args.games for row in measure(games, args.rounds)]
    how = (
        f"- each check compiled from the repo's macros; median of {args.rounds} runs of each form in turns "
        "after a warm-up of both; the Spark jobs of one more run of each"
    )
    title = "The all-games checks, one pass against two, warm session"
    append_section(RESULTS, title, [how, "", *TABLE_HEAD, *rows], heading=HEADING)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
