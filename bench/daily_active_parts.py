"""What each part of a game's daily_active statement costs, on the lakehouse a freshness run left.

    python -m bench.daily_active_parts [--warehouse DIR] [--game kart_legends] [--rounds 5]

`bench.freshness` cycles a pool of events whose event times span seven days, so every batch of
every game holds seven event days, and player_agg's latest day is the last of them: daily_active
adds that day and recounts the six before it from silver (macros/medallion/gold_daily_active.sql).
On the warehouse such a run left (``--warehouse``, the bench's by default), idle and in one warm
local session, this times for one game the batch of silver's last insert (its change feed):

- the batch read alone;
- the added part: the batch's rows on or after player_agg's latest day, classified against
  player_agg as it stands;
- the recount of the batch days before that day, named as literals, as changes to the stored days;
- the recount of every batch day (stop 54's statement, whose dates came from a query before it);
- the whole source of this stop's statement: the added part and the recount, unioned.

The SQL is a replica of the macro's (hand-written, the tables read by path). Medians of
``--rounds`` after a warm-up are printed and appended to bench/results/daily_active_parts.md
with the machine, the date and the sizes read.
"""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

from deltalake import DeltaTable

from bench.day_partition_reads import median_seconds
from bench.results_file import append_section
from ingest.core.settings.paths import PROJECT_DIR
from ingest.ops.daily_active_batches import players_through, rows_committed

RESULTS = PROJECT_DIR / "bench" / "results" / "daily_active_parts.md"
DEFAULT_WAREHOUSE = PROJECT_DIR / ".cache" / "bench-freshness" / "warehouse"
COUNTS = """count(distinct gamer_id) as active_players,
       count(distinct if(event_type = 'purchase', gamer_id, null)) as paying_players,
       count_if(event_type = 'session_start') as session_count,
       count_if(event_type = 'match_start') as match_count,
       count(*) as event_count"""


def _utc_date(at: str) -> str:
    return f"date_from_unix_date(cast(floor(unix_micros({at}) / 86400000000) as int))"


def _batch(silver: Path, version: int) -> str:
    return f"""select * except (_change_type, _commit_version, _commit_timestamp),
        _commit_version as silver_version
    from table_changes_by_path('{silver}', {version}, {version}) where _change_type = 'insert'"""


def _added(silver: Path, players: Path, version: int, through: str) -> str:
    day = "batch_players.event_date"

    def new_to_day(last_at: str) -> str:
        return f"when {_utc_date(last_at)} < {day} then 1 when {_utc_date(last_at)} = {day} then 0"

    return f"""with batch_players as (
    select event_date, gamer_id, count(*) as event_count,
        count_if(event_type = 'session_start') as session_count,
        count_if(event_type = 'match_start') as match_count,
        count_if(event_type = 'purchase') > 0 as purchased,
        max(silver_loaded_at) as silver_loaded_at, max(silver_version) as silver_version
    from ({_batch(silver, version)}) where event_date >= date '{through}'
    group by event_date, gamer_id
), classified as (
    select batch_players.*,
        case when known.gamer_id is null then 1 {new_to_day("known.last_event_at")} end as new_active,
        case when not batch_players.purchased then 0 when coalesce(known.purchase_count, 0) = 0 then 1
            {new_to_day("known.last_purchase_at")} end as new_paying
    from batch_players left join delta.`{players}` as known on batch_players.gamer_id = known.gamer_id
)
select event_date, sum(new_active) as active_players, sum(new_paying) as paying_players,
    sum(session_count) as session_count, sum(match_count) as match_count,
    sum(event_count) as event_count, max(silver_loaded_at) as silver_loaded_at,
    max(silver_version) as silver_version
from classified
group by event_date
having assert_true(count_if(new_active is null or new_paying is null) = 0) is null"""


def _recount(silver: Path, daily: Path, version: int, days: list[str]) -> str:
    named = ", ".join(f"date '{day}'" for day in days)
    return f"""with counted as (
    select event_date, {COUNTS}, max(silver_loaded_at) as silver_loaded_at
    from delta.`{silver}` version as of {version} where event_date in ({named})
    group by event_date
)
select counted.event_date,
    counted.active_players - coalesce(stored.active_players, 0) as active_players,
    counted.paying_players - coalesce(stored.paying_players, 0) as paying_players,
    counted.session_count - coalesce(stored.session_count, 0) as session_count,
    counted.match_count - coalesce(stored.match_count, 0) as match_count,
    counted.event_count - coalesce(stored.event_count, 0) as event_count,
    counted.silver_loaded_at, cast({version} as bigint) as silver_version
from counted left join delta.`{daily}` as stored on counted.event_date = stored.event_date"""


def measure(spark: Any, warehouse: Path, game: str, rounds: int) -> list[str]:
    tables = warehouse / "spark"
    silver = tables / "silver.db" / f"silver_{game}"
    players = tables / "gold.db" / f"gold_{game}_player_agg"
    daily = tables / "gold.db" / f"gold_{game}_daily_active"
    version = DeltaTable(str(silver)).version()
    committed = rows_committed(silver, version - 1, version)
    through = players_through(DeltaTable(str(players)))
    if committed is None or not committed["dates"] or through is None:
        raise SystemExit(f"daily_active_parts: {silver} v{version} brought no rows, or player_agg holds none")
    dates = committed["dates"]
    late = [day for day in dates if day < through]
    if not late:
        raise SystemExit(f"daily_active_parts: {game}'s last batch has no day before {through}")
    added, recount = _added(silver, players, version, through), _recount(silver, daily, version, late)
    parts = {
        "the batch read alone": f"select count(*) from ({_batch(silver, version)})",
        f"added part: days from {through}": added,
        f"recount of the {len(late)} days before it, literals": recount,
        f"recount of all {len(dates)} batch days (stop 54)": _recount(silver, daily, version, dates),
        "this stop's source: added + recount": f"select * from ({added}) union all select * from ({recount})",
    }
    batch_rows = spark.sql(f"select count(*) from ({_batch(silver, version)})").first()[0]
    named = ", ".join(f"date '{day}'" for day in late)
    day_rows = spark.sql(f"select count(*) from delta.`{silver}` where event_date in ({named})").first()[0]
    lines = [
        f"- game {game}: silver v{version}, its last insert {batch_rows:,} rows over days "
        f"{dates[0]}..{dates[-1]}; player_agg's latest day {through}; the {len(late)} recounted days "
        f"hold {day_rows:,} rows; median of {rounds} after a warm-up",
        "",
        "| part | s |",
        "|---|---:|",
    ]
    for name, sql in parts.items():
        seconds = median_seconds(spark, sql, rounds)
        lines.append(f"| {name} | {seconds:.2f} |")
        print(f"daily_active_parts: {name}: {seconds:.2f} s", flush=True)
    return lines


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--warehouse", type=Path, default=DEFAULT_WAREHOUSE)
    parser.add_argument("--game", default="kart_legends")
    parser.add_argument("--rounds", type=int, default=5)
    args = parser.parse_args(argv)
    if not (args.warehouse / "spark" / "silver.db" / f"silver_{args.game}").exists():
        parser.error(f"no silver table for {args.game!r} under {args.warehouse}: run bench.freshness first")
    from ingest.core.spark.session import local_session

    spark = local_session(args.warehouse)
    spark.sparkContext.setLogLevel("ERROR")
    body = measure(spark, args.warehouse, args.game, args.rounds)
    spark.stop()
    heading = "# daily_active's statement, part by part, on a freshness run's lakehouse\n"
    append_section(RESULTS, "daily_active parts (bench/daily_active_parts.py)", body, heading=heading)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
