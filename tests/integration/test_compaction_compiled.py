"""The refresh's compaction (ingest/ops/lakehouse_upkeep.py) runs Spark's OPTIMIZE compiled even
when the cycle runs interpreted: it reads every row of the files it packs, and interpreted it
took 40.8 s against 7.3 s for a day of 826,400 rows (bench/results/upkeep_cost.md). Real Spark
+ Delta: the session's mode is put back after it, and nothing is lost."""

from __future__ import annotations

from pathlib import Path

import pytest

from ingest.ops.codegen_mode import FACTORY_MODE, WHOLE_STAGE, classes_compiled, set_mode
from ingest.ops.lakehouse_upkeep import DueCompaction, compact
from tests.integration import dbt_support as support

pytestmark = [pytest.mark.integration]

DAY = "2026-11-27"


def test_a_compaction_runs_compiled_in_an_interpreted_session_and_leaves_it_interpreted(
    tmp_path: Path,
) -> None:
    with support.local_spark(tmp_path / "warehouse") as spark:
        spark.sql("create schema if not exists silver")
        spark.sql(
            "create table silver.silver_x (event_id string, n bigint, event_date date) "
            "using delta partitioned by (event_date)"
        )
        for batch in range(3):
            spark.sql(
                f"insert into silver.silver_x select uuid(), id, date '{DAY}' "
                f"from range({batch * 10}, {batch * 10 + 10})"
            )
        set_mode(spark, True)
        spark.sql("select count(*) from silver.silver_x where n >= 0").collect()
        interpreted_before = classes_compiled(spark)
        spark.sql("select sum(n) from silver.silver_x where n >= 0").collect()
        assert classes_compiled(spark) == interpreted_before, "the session does not run interpreted"

        files = spark.sql("describe detail silver.silver_x").first()["numFiles"]
        packed = compact(spark, DueCompaction("silver.silver_x", (DAY,), files))

        assert packed == files >= 3
        assert spark.sql("describe detail silver.silver_x").first()["numFiles"] == 1
        assert classes_compiled(spark) > interpreted_before, "the OPTIMIZE ran interpreted"
        assert (spark.conf.get(WHOLE_STAGE), spark.conf.get(FACTORY_MODE)) == ("false", "NO_CODEGEN")
        assert spark.sql("select count(*), sum(n) from silver.silver_x").first() == (30, sum(range(30)))
