"""Silver throughput: dbt's incremental silver models against a hand-written Spark SQL job.

    python -m bench.silver_throughput [--dir .cache/bench-throughput] [--new 1000000]

One lakehouse (5 games, 20,000 events of history, built once by ``bench.incremental prepare``)
gets ``--new`` events in bronze (1% of them producer retries). Then, in one warm Spark session:

1. dbt: ``dbt run`` of the bronze slice and every game's silver model, as a build runs them;
2. by hand: the same work written directly in Spark SQL, the engine's limit: one read of the
   bronze change feed for the batch, cached, then per game the same drop rules, the same
   first-landing dedup and the same anti-join on the batch's event dates, inserted into a copy
   of that game's silver table taken before step 1.

Both must add the same rows; the rows/s of each and their ratio are appended to
bench/results/incremental.md with the machine and date. dbt runs first, so the hand-written job
meets a warmer page cache: the ratio errs in the job's favour.
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import os
import platform
import sys
import time
from pathlib import Path
from typing import Any

from bench.incremental import RESULTS, _bronze_rows, _dbt, _files_read, _land, _last_execution, _session
from bench.incremental import prepare as prepare_lakehouse
from ingest.core.settings.paths import PROJECT_DIR

HISTORY = 20_000
EVENT_TYPES = (
    "'session_start', 'session_end', 'match_start', 'match_end', 'level_up', 'purchase', 'achievement'"
)
SILVER_COLUMNS = """
    event_id, game_name as game_slug, gamer_id, event_type, event_timestamp as event_at, event_date,
    device_id, session_id, score, level, duration_ms, platform, region, client_build, is_ranked,
    network_latency_ms, _kafka_topic as kafka_topic, _kafka_partition as kafka_partition,
    _kafka_offset as kafka_offset, _kafka_timestamp as kafka_published_at, _kafka_key as kafka_key,
    _schema_id as schema_id, _ingested_at as ingested_at, _commit_version as bronze_version,
    concat_ws(':', _kafka_topic, cast(_kafka_partition as string), cast(_kafka_offset as string))
        as bronze_row_key,
    filter(array(
        case when not coalesce(score is null or score >= 0, false) then 'score_not_negative' end,
        case when not coalesce(network_latency_ms is null or network_latency_ms between 0 and 60000, false)
            then 'latency_plausible' end
    ), rule_name -> rule_name is not null) as dq_warnings
"""
DROP_RULES = f"""
    event_id is not null and event_id != '' and gamer_id is not null and gamer_id != ''
    and event_timestamp is not null and event_type in ({EVENT_TYPES})
    and event_timestamp <= _ingested_at + interval 60 minutes
    and to_date(event_timestamp) >= date '2020-01-01'
"""


def _silver_mark(spark: Any, table: str) -> int:
    """The bronze version ``table`` has read up to: in the userMetadata of the newest commit that
    carries one (macros/medallion/bronze_marks.sql), else the table property older builds kept."""
    for row in spark.sql(f"describe history {table}").collect():
        metadata = json.loads(row["userMetadata"]) if row["userMetadata"] else {}
        if "gamelake.bronze_version" in metadata:
            return int(metadata["gamelake.bronze_version"])
    properties = {row[0]: row[1] for row in spark.sql(f"show tblproperties {table}").collect()}
    return int(properties["gamelake.bronze_version"])


def _count(spark: Any, table: str) -> int:
    return int(spark.table(table).count())


def _hand_job(spark: Any, bronze: Path, games: list[str], first: int, last: int) -> float:
    """The silver inserts written by hand; returns its wall seconds."""
    started = time.monotonic()
    changes = spark.sql(
        f"select * from table_changes('delta.`{bronze}`', {first}, {last}) where _change_type = 'insert'"
    ).cache()
    changes.createOrReplaceTempView("new_bronze")
    dates = spark.sql("select game_name, collect_set(cast(event_date as string)) from new_bronze group by 1")
    by_game = {row[0]: row[1] for row in dates.collect()}
    for game in games:
        days = ", ".join(f"date '{d}'" for d in by_game.get(game, [])) or "null"
        spark.sql(
            f"""
            insert into hand.silver_{game} by name
            select
                batch.*,
                cast(null as string) as message_type,  -- this bench's bronze predates _message_type
                current_timestamp() as silver_loaded_at
            from (
                select first_landed.* from (
                    select min_by(struct({SILVER_COLUMNS}),
                                  struct(_ingested_at, _kafka_partition, _kafka_offset)) as first_landed
                    from new_bronze
                    where game_name = '{game}' and {DROP_RULES}
                    group by event_id
                )
            ) as batch
            left anti join (
                select event_id, event_date from hand.silver_{game} where event_date in ({days})
            ) as loaded
                on batch.event_id = loaded.event_id and batch.event_date = loaded.event_date
            """
        )
    changes.unpersist()
    return time.monotonic() - started


def run(root: Path, new: int) -> dict[str, Any]:
    if not (root / "state.json").exists():
        prepare_lakehouse(root, HISTORY, 5)
    state = json.loads((root / "state.json").read_text())
    games = state["games"]
    os.environ["GAMELAKE_BRONZE_PATH"] = str(root / "warehouse" / "bronze" / "game_events")
    spark = _session(root)
    bronze = root / "warehouse" / "bronze" / "game_events"
    silver = [f"silver.silver_{g}" for g in games]
    spark.sql("create database if not exists hand")
    for game, table in zip(games, silver, strict=True):
        spark.sql(f"drop table if exists hand.silver_{game}")
        spark.sql(
            f"create table hand.silver_{game} using delta partitioned by (event_date) "
            f"as select * from {table}"
        )
    first = min(_silver_mark(spark, t) for t in silver) + 1
    before = {t: _count(spark, t) for t in silver}
    fresh = _bronze_rows(spark, state["next_id"], new, games, 0.01)
    retries = fresh.limit(new // 100).selectExpr(
        "* except (_kafka_offset)", f"_kafka_offset + {10**12} as _kafka_offset"
    )
    _land(spark, bronze, fresh.unionByName(retries))
    last = int(spark.sql(f"describe history delta.`{bronze}` limit 1").first()["version"])
    state["next_id"] += new
    (root / "state.json").write_text(json.dumps(state))
    batch = int(
        spark.sql(f"select count(*) from table_changes('delta.`{bronze}`', {first}, {last})").first()[0]
    )

    execution = _last_execution()
    dbt_s, nodes = _dbt(root, "run", "--select", "stg_bronze__new_events", *(f"silver_{g}" for g in games))
    files = _files_read(execution)
    node_s = sum(n["seconds"] for n in nodes)
    dbt_added = sum(_count(spark, t) - before[t] for t in silver)

    hand_s = _hand_job(spark, bronze, games, first, last)
    hand_added = sum(
        _count(spark, f"hand.silver_{g}") - before[t] for g, t in zip(games, silver, strict=True)
    )
    figures = {
        "bronze_rows": batch,
        "dbt_added": dbt_added,
        "hand_added": hand_added,
        "dbt_command_s": round(dbt_s, 1),
        "dbt_nodes_s": round(node_s, 1),
        "nodes": nodes,
        "hand_s": round(hand_s, 1),
        "files_read": {t: v for t, v in files.items() if "silver" in t or "bronze" in t},
    }
    print(json.dumps(figures, indent=1))
    return figures


def record(figures: dict[str, Any]) -> None:
    rows = figures["bronze_rows"]
    hand, dbt_nodes, dbt_command = figures["hand_s"], figures["dbt_nodes_s"], figures["dbt_command_s"]
    slowest = sorted(figures["nodes"], key=lambda n: -n["seconds"])
    lines = [
        f"\n## Silver throughput: {rows:,} bronze rows in one batch, dbt against hand-written Spark SQL",
        f"{dt.datetime.now(dt.UTC):%Y-%m-%d %H:%M} UTC, {platform.node()}, {os.cpu_count()} cores, "
        f"Python {platform.python_version()}, load average {os.getloadavg()[0]:.2f}; 5 games, "
        f"{HISTORY:,} events of history before the batch, one warm Spark session (`local[2]`) for both; "
        "`python -m bench.silver_throughput`.",
        "",
        "| | seconds | silver rows/s (bronze rows of the batch / s) | against the hand-written job |",
        "|---|---|---|---|",
        f"| hand-written Spark SQL (engine's limit) | {hand} | {rows / hand:,.0f} | 1.00 |",
        f"| dbt: slice + silver nodes | {dbt_nodes} | {rows / dbt_nodes:,.0f} | "
        f"{dbt_nodes / hand:.2f}x the time |",
        f"| dbt: the whole `dbt run` command | {dbt_command} | {rows / dbt_command:,.0f} | "
        f"{dbt_command / hand:.2f}x the time |",
        "",
        f"Rows added to silver: dbt {figures['dbt_added']:,}, hand-written {figures['hand_added']:,} "
        f"({'the same' if figures['dbt_added'] == figures['hand_added'] else 'DIFFERENT'}).",
        "dbt nodes: " + ", ".join(f"{n['node']} {n['seconds']} s" for n in slowest) + ".",
        "Files read by dbt's scans (files read, scans): "
        + ", ".join(f"{t}: {v[0]} in {v[1]} scans" for t, v in sorted(figures["files_read"].items()))
        + ".",
    ]
    with RESULTS.open("a") as out:
        out.write("\n".join(lines) + "\n")
    print("\n".join(lines))


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m bench.silver_throughput", description=__doc__.split("\n")[0]
    )
    parser.add_argument("--dir", type=Path, default=PROJECT_DIR / ".cache" / "bench-throughput")
    parser.add_argument("--new", type=int, default=1_000_000)
    args = parser.parse_args(argv)
    figures = run(args.dir.resolve(), args.new)
    record(figures)
    return 0 if figures["dbt_added"] == figures["hand_added"] else 1


if __name__ == "__main__":
    sys.exit(main())
