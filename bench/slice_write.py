"""The slice's write, paired: file statistics on bronze_version alone against Delta's default.

    python -m bench.slice_write [--rows 600000] [--rounds 6] [--dir .cache/bench-slice-write]

The slice (``stg_bronze__new_events``) is replaced whole every build, partitioned by game_slug;
its readers prune by that partition and find the bounds row by bronze_version's null count, so
no reader skips files on any other column. Delta collects statistics on a table's first 32
columns by default: all 30 of the slice's. This bench writes the same ``--rows`` slice-shaped
rows (5 games, the slice's columns and types; ~600,000 is a 20,000 events/s build) with
``create or replace table ... partitioned by (game_slug)`` both ways, in turn, from one cached
source in one warm Spark session, and appends each side's times and their ratio to
bench/results/slice_write.md with the machine and date. Only the write differs between the
sides: the refresh's read of bronze's change feed is the same for both and not in the times.
"""

from __future__ import annotations

import argparse
import statistics
import time
from pathlib import Path
from typing import Any

from bench.incremental import _session
from bench.results_file import append_section
from ingest.core.settings.paths import PROJECT_DIR

RESULTS = PROJECT_DIR / "bench" / "results" / "slice_write.md"
SIDES = {
    "statistics on bronze_version (the slice's)": "'delta.dataSkippingStatsColumns' = 'bronze_version'",
    "statistics on every column (Delta's default)": "'delta.checkpointInterval' = '1000'",
}
GAMES = "array('space_raiders', 'kart_legends', 'dungeon_depths', 'puzzle_pop', 'retro_arena')"
# The slice's 30 columns with their types; values shaped like the freshness bench's events.
SLICE_ROWS = f"""
select
    uuid() as event_id, element_at({GAMES}, cast(id % 5 as int) + 1) as game_slug,
    concat('p', cast(id % 50000 as string)) as gamer_id,
    element_at(array('session_start', 'match_end', 'level_up', 'purchase'), cast(id % 4 as int) + 1)
        as event_type,
    timestamp_seconds(1764460800 + id / 20) as event_at, date '2026-11-30' as event_date,
    concat('dev-', cast(id % 9999 as string)) as device_id, uuid() as session_id, id * 7 as score,
    cast(id % 90 as int) as level, id % 100000 as duration_ms, 'ps5' as platform,
    'eu-west' as region, '1.4.2' as client_build, id % 2 = 0 as is_ranked,
    rand(7) * 100 as network_latency_ms, 'game-events' as kafka_topic,
    cast(id % 6 as int) as kafka_partition, id as kafka_offset,
    timestamp_seconds(1764460800 + id / 20) as kafka_published_at, uuid() as kafka_key,
    7 as schema_id, 'gamelake.events.GameEvent' as message_type,
    current_timestamp() as ingested_at, 100 + id div 20000 as bronze_version,
    concat('game-events:', cast(id % 6 as string), ':', cast(id as string)) as bronze_row_key,
    cast(100 as bigint) as slice_from_version, cast(130 as bigint) as slice_to_version,
    current_timestamp() as slice_built_at, cast(null as string) as slice_reader_marks
from range(ROWS)
"""


def _write(spark: Any, table: str, properties: str) -> float:
    started = time.perf_counter()
    spark.sql(
        f"create or replace table {table} using delta partitioned by (game_slug)"
        f" tblproperties ({properties}) as select * from slice_source"
    )
    return time.perf_counter() - started


def run(root: Path, rows: int, rounds: int) -> dict[str, list[float]]:
    spark = _session(root)
    spark.sql("create database if not exists slice_write")
    spark.sql(f"cache table slice_source as {SLICE_ROWS.replace('ROWS', str(rows))}")
    spark.sql("select count(*) from slice_source").collect()
    times: dict[str, list[float]] = {side: [] for side in SIDES}
    tables = {side: f"slice_write.side_{index}" for index, side in enumerate(SIDES)}
    for round_ in range(rounds + 1):  # round 0 warms the JVM for both sides and is not counted
        order = list(SIDES) if round_ % 2 == 0 else list(reversed(SIDES))
        for side in order:
            took = _write(spark, tables[side], SIDES[side])
            print(f"round {round_}: {side}: {took:.2f} s", flush=True)
            if round_:
                times[side].append(took)
    return times


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rows", type=int, default=600_000)
    parser.add_argument("--rounds", type=int, default=6)
    parser.add_argument("--dir", type=Path, default=PROJECT_DIR / ".cache" / "bench-slice-write")
    args = parser.parse_args()
    times = run(args.dir, args.rows, args.rounds)
    ours, default = (statistics.median(times[side]) for side in SIDES)
    body = [
        f"- {args.rows:,} slice-shaped rows, 5 games, `create or replace table` partitioned by game_slug,"
        f" {args.rounds} rounds after a warm-up, the sides in turn (`python -m bench.slice_write`)",
        "",
        "| side | median s | every round s |",
        "|---|---|---|",
        *(
            f"| {side} | {statistics.median(t):.2f} | {', '.join(f'{x:.2f}' for x in t)} |"
            for side, t in times.items()
        ),
        "",
        f"bronze_version alone against every column: {ours / default:.2f}x the time"
        f" ({default - ours:+.2f} s a write saved)",
    ]
    append_section(
        RESULTS,
        "The slice's write with file statistics on bronze_version alone and on every column",
        body,
        "# The slice's write: which columns carry file statistics (bench/slice_write.py)\n",
    )


if __name__ == "__main__":
    main()
