"""The Spark side of the build-lock race on S3: a driver of its own, as dbt's on-run-start on
another host, taking the lock with the MERGE that macros/medallion/build_lock.sql sends.

Run as ``python -m tests.integration.s3_spark_lock_taker WAREHOUSE TABLES HOLDER HOLD``. It starts
its Spark session, prints ``ready``, then for each wall-clock start time read from stdin takes the
lock at that instant, holds it HOLD seconds and releases it, then prints ``held``; or prints
``refused`` when the MERGE wrote no row or lost its commit to another taker.
"""

from __future__ import annotations

import sys
import time
from pathlib import Path

from ingest.core.spark.object_storage import as_s3a
from ingest.core.spark.session import local_session
from ingest.landing.delta.table_location import TableLocation
from ingest.ops.dbt_build_lock import lock_table

# as build_lock.sql writes it, with the lock table named by its path
TAKE = (
    "merge into delta.`{table}` as held using (select 'build' as name, '{holder}' as holder, "
    "current_timestamp() as taken_at) as wanted on held.name = wanted.name "
    "when matched and held.taken_at < current_timestamp() - interval 60 minutes then update set * "
    "when not matched then insert *"
)
RELEASE = "delete from delta.`{table}` where holder = '{holder}'"


def take(spark, table: str, holder: str) -> bool:
    try:
        written = spark.sql(TAKE.format(table=table, holder=holder)).first()["num_affected_rows"]
    except Exception as err:  # py4j's wrapper: Delta's ConcurrentAppendException and its kin
        if "Concurrent" not in str(err):
            raise
        return False
    return int(written) == 1


def main(argv: list[str]) -> None:
    warehouse, tables, holder, hold = Path(argv[1]), argv[2], argv[3], float(argv[4])
    spark = local_session(warehouse, lakehouse=tables)
    table = as_s3a(lock_table(TableLocation.of(tables)).uri)
    spark.sql(f"select count(*) from delta.`{table}`").collect()  # the log read before any race
    print("ready", flush=True)
    try:
        for line in sys.stdin:
            time.sleep(max(0.0, float(line) - time.time()))
            if take(spark, table, holder):
                time.sleep(hold)
                spark.sql(RELEASE.format(table=table, holder=holder)).collect()
                print("held", flush=True)  # once released, as a delta-rs taker's exit says
            else:
                print("refused", flush=True)
    finally:
        spark.stop()


if __name__ == "__main__":
    main(sys.argv)
