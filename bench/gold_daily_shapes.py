"""What gold's daily-active write costs as a MERGE against a replace of the touched dates.

    python -m bench.gold_daily_shapes [--game space_raiders] [--rounds 6] [--versions 3]

gold_<game>_daily_active recomputes the event dates that received new silver rows and MERGEs
them by event_date (macros/medallion/gold_daily_active.sql). Distinct counts do not add up, so
the recompute stays; the question is the write. On the 5-game lakehouse bench.refresh_profile
keeps (.cache/bench-profile/games-5), in one warm Spark session, a copy of the table takes the
recompute of the dates touched by silver's last ``--versions`` versions, ``--rounds`` times in
each shape, interleaved:

- ``merge as built``: ``merge ... on event_date`` (dbt's ``merge``);
- ``replace where``: ``insert into ... replace where event_date in (...)``, one pass, no join;
- ``recompute alone``: ``count(*)`` of the source, no write;
- ``touched dates``: the query that names the dates (the model's run_query).

The first round warms up and is not counted. After the rounds, one more run of each write
shape lists the Spark jobs it ran (Spark's status store: each job's time), so that what is not
in a job (planning, the Delta commit on the driver) shows as the wall time left over. Medians
and the breakdown are appended to bench/results/gold_merge.md.
"""

from __future__ import annotations

import time
from typing import Any

from bench.gold_merge_shapes import gold_bench_args, interleaved_rounds, median_table, open_lakehouse
from bench.results_file import append_section
from ingest.core.settings.paths import PROJECT_DIR

RESULTS = PROJECT_DIR / "bench" / "results" / "gold_merge.md"


def _recompute(silver: str, version: int, dates: str, game: str) -> str:
    return f"""
    select event_date, '{game}' as game_slug, count(distinct gamer_id) as active_players,
        count(distinct if(event_type = 'purchase', gamer_id, null)) as paying_players,
        count_if(event_type = 'session_start') as session_count,
        count_if(event_type = 'match_start') as match_count, count(*) as event_count,
        max(silver_loaded_at) as silver_loaded_at, cast({version} as bigint) as silver_version,
        current_timestamp() as updated_at
    from {silver} version as of {version}
    where event_date in ({dates})
    group by event_date"""


def _shapes(silver: str, first: int, last: int, dates: str, game: str) -> dict[str, str]:
    source = _recompute(silver, last, dates, game)
    return {
        "merge as built": f"merge into dc as d using ({source}) as s on s.event_date = d.event_date"
        " when matched then update set * when not matched then insert *",
        "replace where": f"insert into dc replace where event_date in ({dates}) {source}",
        "recompute alone": f"select count(*) from ({source})",
        "touched dates": "select distinct cast(event_date as string)"
        f" from table_changes('{silver}', {first}, {last}) where _change_type = 'insert'",
    }


def _timed(spark: Any, sql: str) -> float:
    started = time.perf_counter()
    spark.sql(sql).collect()
    return time.perf_counter() - started


def _job_ids(store: Any) -> set[int]:
    jobs = store.jobsList(None)
    return {int(jobs.apply(i).jobId()) for i in range(jobs.length())}


def _job_seconds(store: Any, ids: set[int]) -> list[float]:
    """The run time of each finished job of ``ids``, from Spark's status store."""
    jobs, found = store.jobsList(None), []
    for i in range(jobs.length()):
        job = jobs.apply(i)
        started, ended = job.submissionTime(), job.completionTime()
        if int(job.jobId()) in ids and started.isDefined() and ended.isDefined():
            found.append((ended.get().getTime() - started.get().getTime()) / 1000)
    return found


def _breakdown(spark: Any, shapes: dict[str, str]) -> list[str]:
    """Each write shape once more: its wall time, its Spark jobs, and the time in none of them."""
    store = spark._jsc.sc().statusStore()
    lines = ["", "| shape, one more run | wall s | Spark jobs | in jobs s | outside jobs s | longest job s |"]
    lines.append("|---|---:|---:|---:|---:|---:|")
    for shape in ("merge as built", "replace where"):
        before = _job_ids(store)
        wall = _timed(spark, shapes[shape])
        seconds = _job_seconds(store, _job_ids(store) - before)
        lines.append(
            f"| {shape} | {wall:.2f} | {len(seconds)} | {sum(seconds):.2f} | {wall - sum(seconds):.2f}"
            f" | {max(seconds, default=0):.2f} |"
        )
    return lines


def copy_with_touched_dates(spark: Any, gold: str, silver: str, first: int, last: int) -> tuple[int, str]:
    """Copy ``gold`` to ``default.dc``; the event dates silver's versions ``first``..``last`` touched
    (how many, and as SQL date literals)."""
    touched = spark.sql(
        f"select distinct event_date from table_changes('{silver}', {first}, {last})"
        " where _change_type = 'insert'"
    ).collect()
    spark.sql("use default")
    spark.sql(f"create or replace table dc using delta as select * from {gold}")
    return len(touched), ", ".join(f"date '{row[0]}'" for row in touched)


def run(game: str, rounds: int, versions: int) -> list[str]:
    gold, silver = f"gold.gold_{game}_daily_active", f"silver.silver_{game}"
    spark, last = open_lakehouse(silver)
    first = max(last - versions + 1, 1)
    touched, dates = copy_with_touched_dates(spark, gold, silver, first, last)
    shapes = _shapes(silver, first, last, dates, game)
    times = interleaved_rounds(shapes, rounds, lambda _shape, sql: _timed(spark, sql))
    breakdown = _breakdown(spark, shapes)
    days = spark.table("dc").count()
    spark.sql("drop table dc")
    spark.stop()
    shown = f"- `{gold}`: {days} days; {touched} touched by silver's last {versions} versions"
    return [shown, *median_table(times, rounds), *breakdown]


def main() -> None:
    args = gold_bench_args(__doc__)
    body = run(args.game, args.rounds, args.versions)
    append_section(RESULTS, "Gold's daily-active write: MERGE against a replace of the touched dates", body)


if __name__ == "__main__":
    main()
