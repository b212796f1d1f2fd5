"""Spark on delta-rs' checkpoints of its tables (ingest/ops/lakehouse_checkpoints.py), on real
Spark + Delta: a silver-shaped table (partitioned, change data feed on) that Spark inserts into
and a gold-shaped one it merges into, checkpointed by the upkeep's delta-rs between Spark's
commits. The silver one was created as before the upkeep wrote checkpoints (Spark's interval of
10) and is given the interval dbt now gives, by the upkeep, between two inserts. Spark writes no
checkpoint of its own, keeps committing after delta-rs' checkpoint, and a cold Spark (its Delta
log cache cleared, so it starts from the checkpoint) reads every row and every change back,
across the commit that set the interval."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from deltalake import DeltaTable

from ingest.landing.delta.table_location import TableLocation
from ingest.ops.lakehouse_checkpoints import (
    INTERVAL,
    SPARK_INTERVAL,
    adopt_interval,
    checkpoint,
    commits_behind,
)
from tests.integration import dbt_support as support

pytestmark = pytest.mark.integration

INSERTS = 14  # past Spark's default interval (10), short of the one dbt gives these tables
CHECKPOINT_BEFORE = 11  # the insert before which delta-rs checkpoints both tables


def _checkpoints(table: Path) -> list[int]:
    found = (table / "_delta_log").glob("*.checkpoint*.parquet")
    return sorted(int(path.name.split(".")[0]) for path in found)


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
            f" tblproperties ({INTERVAL} = {SPARK_INTERVAL})"
        )
        checkpointed_at = {}
        for insert in range(1, INSERTS + 1):
            if insert == 3:  # the upkeep's first visit after the upgrade
                assert adopt_interval(spark, silver, DeltaTable(str(tables["silver_x"])))
                assert not adopt_interval(spark, gold, DeltaTable(str(tables["gold_x"])))
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
    assert checkpoint(table.name, delta)
    return delta.version()
