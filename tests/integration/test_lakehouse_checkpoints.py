"""Spark on delta-rs' checkpoints of its tables (ingest/ops/lakehouse_checkpoints.py), on real
Spark + Delta: a silver-shaped table (partitioned, change data feed on) that Spark inserts into
and a gold-shaped one it merges into, checkpointed by the upkeep's delta-rs between Spark's
commits. The silver one was created as before the upkeep wrote checkpoints (Spark's interval of
10, 30 days of log) and is given the interval and log hours dbt now gives, by the upkeep, in
one commit between two inserts. Spark writes no checkpoint of its own, keeps committing after
delta-rs' checkpoint, and a cold Spark (its Delta log cache cleared, so it starts from the
checkpoint) reads every row and every change back, across the commit that set them."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from deltalake import DeltaTable

from ingest.landing.delta.table_location import TableLocation
from ingest.ops.lakehouse_checkpoints import (
    DEFAULT_LOG_HOURS,
    LOG_RETENTION,
    TOMBSTONE_RETENTION,
    adopt_properties,
    checkpoint,
    commits_behind,
    refresh_table_properties,
)
from ingest.ops.stats_columns import STATS_COLUMNS
from tests.integration import dbt_support as support

pytestmark = pytest.mark.integration

INSERTS = 14  # past Spark's default interval (10), short of the one dbt gives these tables
CHECKPOINT_BEFORE = 11  # the insert before which delta-rs checkpoints both tables


def _checkpoints(table: Path) -> list[int]:
    found = (table / "_delta_log").glob("*.checkpoint*.parquet")
    return sorted(int(path.name.split(".")[0]) for path in found)


def _properties(properties: dict[str, str]) -> str:
    return ", ".join(f"{key} = '{value}'" for key, value in properties.items())


def _cold(spark: Any) -> None:
    """Spark forgets the Delta logs it has loaded: its next read starts from the newest checkpoint."""
    spark._jvm.org.apache.spark.sql.delta.DeltaLog.clearCache()


def test_spark_commits_after_and_reads_back_from_delta_rs_checkpoints(tmp_path: Path) -> None:
    # tables by path: a session reused from an earlier test keeps that test's metastore
    tables = {name: tmp_path / "tables" / name for name in ("silver_x", "gold_x")}
    silver, gold = (f"delta.`{path}`" for path in tables.values())
    with support.local_spark(tmp_path / "warehouse") as spark:
        spark.sql(
            f"create table {silver} (event_id string, gamer_id string, event_date date) using delta"
            " partitioned by (event_date) tblproperties (delta.enableChangeDataFeed = true)"
        )
        spark.sql(
            f"create table {gold} (gamer_id string, event_count bigint) using delta"
            f" tblproperties ({_properties(refresh_table_properties(DEFAULT_LOG_HOURS))})"
        )
        checkpointed_at = {}
        for insert in range(1, INSERTS + 1):
            if insert == 3:  # the upkeep's first visit after the upgrade
                assert adopt_properties(spark, silver, DeltaTable(str(tables["silver_x"])), DEFAULT_LOG_HOURS)
                assert not adopt_properties(spark, gold, DeltaTable(str(tables["gold_x"])), DEFAULT_LOG_HOURS)
                held = DeltaTable(str(tables["silver_x"])).metadata().configuration
                assert held[LOG_RETENTION] == held[TOMBSTONE_RETENTION] == "interval 6 hours", held
            if insert == CHECKPOINT_BEFORE:
                checkpointed_at = {name: _checkpoint(path) for name, path in tables.items()}
            spark.sql(
                f"insert into {silver} select concat('e{insert}-', id), concat('g', id % 3),"
                f" date '2026-11-28' - cast(id % 2 as int) from range(5)"
            )
            spark.sql(
                f"merge into {gold} as gold using (select concat('g', id) as gamer_id, 1 as n"
                " from range(4)) as batch on gold.gamer_id = batch.gamer_id"
                " when matched then update set event_count = gold.event_count + batch.n"
                " when not matched then insert (gamer_id, event_count) values (batch.gamer_id, batch.n)"
            )
        # versions: silver 0 create, 1-2 inserts, 3 the interval, 4-15 inserts; gold 0 create, 1-14 merges
        assert checkpointed_at == {"silver_x": 3 + CHECKPOINT_BEFORE - 3, "gold_x": CHECKPOINT_BEFORE - 1}
        for name, version in checkpointed_at.items():
            assert _checkpoints(tables[name]) == [version], f"Spark checkpointed {name} at its own interval"
        _cold(spark)
        assert spark.sql(f"select count(*) from {silver}").first()[0] == 5 * INSERTS
        changes = spark.sql(
            f"select _commit_version, count(*) from table_changes_by_path('{tables['silver_x']}', 1)"
            " where _change_type = 'insert' group by _commit_version"
        ).collect()
        inserting = [*range(1, 3), *range(4, INSERTS + 2)]
        assert {row[0]: row[1] for row in changes} == dict.fromkeys(inserting, 5)
        held = {row[0]: row[1] for row in spark.sql(f"select * from {gold}").collect()}
        assert held == {f"g{i}": INSERTS for i in range(4)}


def _checkpoint(table: Path) -> int:
    place = TableLocation.of(table)
    delta = place.delta_table()
    assert commits_behind(table.name, place, delta).commits == delta.version() > 0
    assert checkpoint(table.name, delta, place)
    return delta.version()


def _log_entries(table: Path) -> set[str]:
    return {path.name for path in (table / "_delta_log").iterdir()}


def test_the_cleanup_leaves_no_side_files_of_the_versions_it_removed(tmp_path: Path) -> None:
    """Spark leaves a Delta checksum and Hadoop's hidden checksums beside each commit; after the
    upkeep's checkpoint and cleanup (a log retention of 0 hours) none of the removed versions'
    files stay, the kept versions keep theirs, and a cold Spark reads every row, every change
    since the checkpoint, and the checkpoint's version."""
    table = tmp_path / "tables" / "silver_y"
    name = f"delta.`{table}`"
    with support.local_spark(tmp_path / "warehouse") as spark:
        spark.sql(
            f"create table {name} (n bigint, event_date date) using delta partitioned by (event_date)"
            " tblproperties (delta.enableChangeDataFeed = true,"
            " delta.logRetentionDuration = 'interval 0 hours',"
            " delta.deletedFileRetentionDuration = 'interval 0 hours')"
        )
        for insert in range(6):
            spark.sql(f"insert into {name} select id + {insert * 10}, date '2026-11-28' from range(10)")
        before = _log_entries(table)
        assert {f".{6:020d}.json.crc", f"{6:020d}.crc", f".{6:020d}.crc.crc"} <= before, before
        assert checkpoint(table.name, DeltaTable(str(table)), TableLocation.of(table))
        after = _log_entries(table)
        assert not any(entry.startswith((f"{1:020d}", f".{1:020d}")) for entry in after), sorted(after)
        assert {f"{6:020d}.json", f"{6:020d}.crc", f"{6:020d}.checkpoint.parquet"} <= after, sorted(after)
        spark.sql(  # Delta's defaults again (version 7): time travel is refused below a 0-hour retention
            f"alter table {name} set tblproperties (delta.logRetentionDuration = 'interval 30 days',"
            " delta.deletedFileRetentionDuration = 'interval 7 days')"
        )
        for insert in range(6, 8):
            spark.sql(f"insert into {name} select id + {insert * 10}, date '2026-11-28' from range(10)")
        _cold(spark)
        assert spark.sql(f"select count(*), count(distinct n) from {name}").first() == (80, 80)
        assert spark.sql(f"select count(*) from {name} version as of 6").first()[0] == 60
        changes = spark.sql(f"select count(*) from table_changes_by_path('{table}', 8)").first()[0]
        assert changes == 20


def test_the_upkeep_gives_a_table_created_before_statistics_on_its_readers_columns_alone(
    tmp_path: Path,
) -> None:
    """A player_agg that Delta gave statistics on every column, and that predates
    last_purchase_at, is given statistics on the key and the times its readers use (those it
    has: Delta refuses one it lacks) in the upkeep's one commit of properties; Spark's next
    write keeps statistics on those alone, and the table reads back whole."""
    location = tmp_path / "tables" / "gold_stats_player_agg"
    name = "gold.gold_stats_check_player_agg"
    with support.local_spark(tmp_path / "warehouse") as spark:
        spark.sql("create schema if not exists gold")
        spark.sql(f"drop table if exists {name}")
        spark.sql(
            f"create table {name} (gamer_id string, event_count bigint, first_event_at timestamp,"
            f" last_event_at timestamp, best_score bigint) using delta location '{location}'"
        )
        row = "timestamp '2026-11-30 10:00:00', timestamp '2026-11-30 11:00:00'"
        spark.sql(f"insert into {name} values ('g1', 1, {row}, 5)")
        every = {"gamer_id", "event_count", "first_event_at", "last_event_at", "best_score"}
        assert _newest_statistics(location) == every
        assert adopt_properties(spark, name, DeltaTable(str(location)), DEFAULT_LOG_HOURS)
        held = DeltaTable(str(location)).metadata().configuration
        assert held[STATS_COLUMNS] == "gamer_id,first_event_at,last_event_at", held
        assert held[LOG_RETENTION] == "interval 6 hours", held
        assert not adopt_properties(spark, name, DeltaTable(str(location)), DEFAULT_LOG_HOURS)
        spark.sql(f"insert into {name} values ('g2', 2, {row}, 7)")
        assert _newest_statistics(location) == {"gamer_id", "first_event_at", "last_event_at"}
        assert spark.sql(f"select count(*), sum(best_score) from {name}").first() == (2, 12)
        spark.sql(f"drop table {name}")


def _newest_statistics(table: Path) -> set[str]:
    """The columns the newest commit's added files carry statistics for."""
    newest = max((table / "_delta_log").glob("*.json"))
    actions = [json.loads(line) for line in newest.read_text().splitlines() if line]
    return {column for a in actions if "add" in a for column in json.loads(a["add"]["stats"])["nullCount"]}
