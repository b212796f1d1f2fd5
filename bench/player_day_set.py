"""Gold's daily-active write as the day fills: recomputed from silver's day, kept from a
per-game player-day set, or added from the batch with player_agg's stored last events. A growth
law, measured before the product changed and after.

    python -m bench.player_day_set [--rows-per-cycle 10000] [--cycles 10 40 160 320] [--rounds 3]

gold ``_daily_active`` counts distinct players a day, which do not add up across batches, so each
build recomputes the batch's dates from silver's rows of those dates
(macros/medallion/gold_daily_active.sql): its source grows with the day
(bench/results/day_partition_reads.md). The alternative keeps, per game, one row per event date
and player (its counts that day), MERGEd from the batch; the day's counts are then the sums and
the row count of the set's rows of that date, which grow with the players, not the events. It
costs a second MERGE per game a cycle. Both ways here write Delta tables shaped as the product's,
timed whole (statement to commit) in one warm local Spark session:

- ``as built``: ``merge into daily_active`` from the recompute of silver's day partition;
- ``set: players``: ``merge into player_days`` from the batch grouped by date and player (counts
  add up), the target pruned to the batch's date;
- ``set: daily``: ``merge into daily_active`` from the set's rows of that date;
- ``from players`` (as daily_active is built since stop 55): ``merge into daily_active`` from the
  batch alone, each of its players new to the day or not from a player_agg-like table's last
  event read at a version (here every player was active today already, as late in a day), the
  counts added to the stored day; the recount of a day with a late event is in the statement,
  pruned at run time to no partition when none is late, as the macro's. Its source is also timed
  alone, and without the recount branch (what the statement costs when it can be left out).

A silver-like table (bench/day_partition_reads.py's rows, 5,000 players) takes
``--rows-per-cycle`` rows a cycle into today's partition; at each count of ``--cycles`` the set is
made from silver as it stands, the cycle's rows are the batch (a Delta table, as silver's change
feed is read from one), and each write runs ``--rounds`` times after a warm-up (median). The
set's MERGE (and ``from players``) adds the same batch each round: its counts grow, its cost
does not. Printed and appended to bench/results/day_partition_reads.md with the machine and date.
"""

from __future__ import annotations

import argparse
import tempfile
from pathlib import Path
from typing import Any

from bench.day_partition_reads import RESULTS, TODAY, silver_like_rows
from bench.day_partition_reads import median_seconds as _seconds
from bench.results_file import append_section

COUNTS = """
    count(*) as event_count,
    count_if(event_type = 'session_start') as session_count,
    count_if(event_type = 'match_start') as match_count,
    count_if(event_type = 'purchase') as purchase_count"""

AS_BUILT = f"""
merge into daily as t using (
    select event_date, count(distinct gamer_id) as active_players,
        count(distinct if(event_type = 'purchase', gamer_id, null)) as paying_players,
        count_if(event_type = 'session_start') as session_count,
        count_if(event_type = 'match_start') as match_count, count(*) as event_count
    from silver where event_date in (date '{TODAY}') group by event_date
) as s on t.event_date = s.event_date
when matched then update set * when not matched then insert *
"""
SET_PLAYERS = f"""
merge into player_days as t using (
    select event_date, gamer_id,{COUNTS}
    from batch group by event_date, gamer_id
) as s on t.event_date = s.event_date and t.gamer_id = s.gamer_id and t.event_date in (date '{TODAY}')
when matched then update set
    event_count = t.event_count + s.event_count, session_count = t.session_count + s.session_count,
    match_count = t.match_count + s.match_count, purchase_count = t.purchase_count + s.purchase_count
when not matched then insert *
"""
SET_DAILY = f"""
merge into daily_from_set as t using (
    select event_date, count(*) as active_players, count_if(purchase_count > 0) as paying_players,
        sum(session_count) as session_count, sum(match_count) as match_count,
        sum(event_count) as event_count
    from player_days where event_date in (date '{TODAY}') group by event_date
) as s on t.event_date = s.event_date
when matched then update set * when not matched then insert *
"""

UTC_DATE = "date_from_unix_date(cast(floor(unix_micros({}) / 86400000000) as int))"
FROM_PLAYERS = f"""
merge into daily_from_players as t using (
    with batch_players as (
        select event_date, gamer_id, count(*) as event_count,
            count_if(event_type = 'session_start') as session_count,
            count_if(event_type = 'match_start') as match_count,
            count_if(event_type = 'purchase') > 0 as purchased
        from batch group by event_date, gamer_id
    ), classified as (
        select b.*,
            case when k.gamer_id is null then 1
                when {UTC_DATE.format("k.last_event_at")} < b.event_date then 1
                when {UTC_DATE.format("k.last_event_at")} = b.event_date then 0 end as new_active,
            case when not b.purchased then 0 when coalesce(k.purchase_count, 0) = 0 then 1
                when {UTC_DATE.format("k.last_purchase_at")} < b.event_date then 1
                when {UTC_DATE.format("k.last_purchase_at")} = b.event_date then 0 end as new_paying
        from batch_players as b left join {{players}} version as of 0 as k on b.gamer_id = k.gamer_id
    ), batch_days as (
        select event_date, sum(event_count) as event_count, sum(session_count) as session_count,
            sum(match_count) as match_count, sum(new_active) as new_active, sum(new_paying) as new_paying,
            count_if(new_active is null or new_paying is null) = 0 as additive
        from classified group by event_date
    ), added as (
        select b.event_date, coalesce(p.active_players, 0) + b.new_active as active_players,
            coalesce(p.paying_players, 0) + b.new_paying as paying_players,
            coalesce(p.session_count, 0) + b.session_count as session_count,
            coalesce(p.match_count, 0) + b.match_count as match_count,
            coalesce(p.event_count, 0) + b.event_count as event_count
        from batch_days as b left join daily_from_players as p on b.event_date = p.event_date
        where b.additive
    ), recounted as (
        select event_date, count(distinct gamer_id) as active_players,
            count(distinct if(event_type = 'purchase', gamer_id, null)) as paying_players,
            count_if(event_type = 'session_start') as session_count,
            count_if(event_type = 'match_start') as match_count, count(*) as event_count
        from silver where event_date in (select event_date from batch_days where not additive)
        group by event_date
    )
    select * from added union all select * from recounted
) as s on t.event_date = s.event_date
when matched then update set * when not matched then insert *
"""
PLAYERS = """
select gamer_id, count_if(event_type = 'purchase') as purchase_count,
    max(cast(event_date as timestamp)) as last_event_at,
    max(if(event_type = 'purchase', cast(event_date as timestamp), null)) as last_purchase_at
from silver group by gamer_id
"""


def _delta(spark: Any, frame: Any, path: Path, name: str, partitioned: bool = True) -> None:
    writer = frame.write.format("delta").mode("overwrite")
    (writer.partitionBy("event_date") if partitioned else writer).save(str(path))
    spark.read.format("delta").load(str(path)).createOrReplaceTempView(name)


def measure(spark: Any, root: Path, per_cycle: int, cycles: list[int], rounds: int) -> list[str]:
    silver = root / "silver"
    rows_done, lines = 0, []
    for target in sorted(cycles):
        while rows_done // per_cycle < target:
            batch = silver_like_rows(spark, rows_done, per_cycle).coalesce(1)
            batch.write.format("delta").mode("append").partitionBy("event_date").save(str(silver))
            rows_done += per_cycle
        spark.read.format("delta").load(str(silver)).createOrReplaceTempView("silver")
        _delta(spark, batch, root / "batch", "batch")
        set_rows = spark.sql(
            f"select event_date, gamer_id,{COUNTS} from silver group by event_date, gamer_id"
        )
        _delta(spark, set_rows.coalesce(1), root / f"player_days_{target}", "player_days")
        daily = spark.sql(AS_BUILT.split("(", 1)[1].rsplit(") as s", 1)[0])
        _delta(spark, daily, root / f"daily_{target}", "daily", partitioned=False)
        _delta(spark, daily, root / f"daily_from_set_{target}", "daily_from_set", partitioned=False)
        _delta(spark, daily, root / f"daily_from_players_{target}", "daily_from_players", partitioned=False)
        known = root / f"players_{target}"
        spark.sql(PLAYERS).coalesce(1).write.format("delta").save(str(known))
        as_built = _seconds(spark, AS_BUILT, rounds)
        players = _seconds(spark, SET_PLAYERS, rounds)
        from_set = _seconds(spark, SET_DAILY, rounds)
        from_players_sql = FROM_PLAYERS.format(players=f"delta.`{known}`")
        from_players = _seconds(spark, from_players_sql, rounds)
        source = from_players_sql.split("using (", 1)[1].rsplit(") as s on", 1)[0]
        additive = source.replace(" union all select * from recounted", "")
        source_s, additive_s = _seconds(spark, source, rounds), _seconds(spark, additive, rounds)
        set_size = spark.sql(f"select count(*) from player_days where event_date = date '{TODAY}'").first()[0]
        lines.append(
            f"| {target} | {rows_done:,} | {set_size:,} | {as_built:.2f} | {players:.2f} | {from_set:.2f} "
            f"| {players + from_set:.2f} | {(players + from_set) / as_built:.2f}x "
            f"| {from_players:.2f} | {from_players / as_built:.2f}x | {source_s:.2f} | {additive_s:.2f} |"
        )
        print(lines[-1], flush=True)
    return lines


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--rows-per-cycle", type=int, default=10_000)
    parser.add_argument("--cycles", type=int, nargs="+", default=[10, 40, 160, 320])
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args(argv)
    from ingest.core.spark.session import local_session

    with tempfile.TemporaryDirectory(prefix="player-day-set-") as root:
        spark = local_session(Path(root))
        spark.sparkContext.setLogLevel("ERROR")
        rows = measure(spark, Path(root), args.rows_per_cycle, args.cycles, args.rounds)
        spark.stop()
    body = [
        f"- a silver-like table, {args.rows_per_cycle:,} rows a cycle into today's partition "
        f"(one file each), 5,000 players; the batch is the last cycle's rows; "
        f"each write a median of {args.rounds} rounds",
        "",
        "| cycles | today's silver rows | set rows today | as built: daily_active MERGE s "
        "| set: player_days MERGE s | set: daily_active MERGE s | set: both s | set / as built "
        "| from players: daily_active MERGE s | from players / as built "
        "| from players: its source s | of it, without the recount branch s |",
        "|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|",
        *rows,
    ]
    append_section(
        RESULTS,
        "Daily active from silver's day, a player-day set or player_agg's last events"
        " (bench/player_day_set.py)",
        body,
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
