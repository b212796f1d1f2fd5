"""The one Spark + Delta configuration of the project.

``spark_settings()`` is the single source. It is used two ways, never copied:

* ``local_session()`` builds a SparkSession from it (tests, the pipeline summary);
* ``write_defaults()`` renders it into the venv's ``pyspark/conf/spark-defaults.conf``,
  which every Spark the venv launches reads, so dbt-spark's ``session`` method
  (the ``local`` target) and the Spark Thrift Server get exactly the same settings.

Run ``python -m ingest.core.spark.session write-defaults`` after the jars are fetched (``make setup``).
"""

from __future__ import annotations

import os
import sys
from pathlib import Path
from typing import TYPE_CHECKING

from ingest.core.settings.paths import WAREHOUSE_DIR, spark_warehouse
from ingest.core.spark.jvm import delta_jars

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

SPARK_DRIVER_MEMORY = os.environ.get("GAMELAKE_SPARK_MEMORY", "2g")


def spark_settings(warehouse: Path = WAREHOUSE_DIR) -> dict[str, str]:
    """Spark settings for local Delta work with a Derby metastore under ``warehouse``."""
    metastore = warehouse / "metastore_db"
    return {
        "spark.master": "local[2]",
        "spark.app.name": "gamelake",
        "spark.jars": ",".join(str(jar) for jar in delta_jars()),
        "spark.sql.extensions": "io.delta.sql.DeltaSparkSessionExtension",
        "spark.sql.catalog.spark_catalog": "org.apache.spark.sql.delta.catalog.DeltaCatalog",
        "spark.sql.catalogImplementation": "hive",
        "spark.sql.warehouse.dir": str(spark_warehouse(warehouse)),
        "spark.hadoop.javax.jdo.option.ConnectionURL": f"jdbc:derby:;databaseName={metastore};create=true",
        "spark.driver.extraJavaOptions": f"-Dderby.system.home={warehouse}",
        "spark.driver.memory": SPARK_DRIVER_MEMORY,
        "spark.sql.shuffle.partitions": "4",
        "spark.default.parallelism": "2",
        "spark.sql.session.timeZone": "UTC",
        "spark.ui.enabled": "false",
        # The driver's RPC and block manager listen on loopback, not on the host name's address.
        "spark.driver.bindAddress": "127.0.0.1",
        "spark.driver.host": "127.0.0.1",
        "spark.ui.showConsoleProgress": "false",
        "spark.sql.adaptive.enabled": "true",
        "spark.databricks.delta.snapshotPartitions": "2",
        "spark.sql.execution.arrow.pyspark.enabled": "true",
        # Not a Spark setting: where dbt's on-run-start registers the bronze source.
        "spark.gamelake.bronze.path": os.environ.get(
            "GAMELAKE_BRONZE_PATH", str(warehouse / "bronze" / "game_events")
        ),
    }


def defaults_file() -> Path:
    import pyspark

    return Path(pyspark.__file__).parent / "conf" / "spark-defaults.conf"


def write_defaults() -> Path:
    """Render spark_settings() as the venv's spark-defaults.conf."""
    path = defaults_file()
    path.parent.mkdir(parents=True, exist_ok=True)
    WAREHOUSE_DIR.mkdir(parents=True, exist_ok=True)
    lines = [
        "# Written by `python -m ingest.core.spark.session write-defaults` from "
        "ingest/core/spark/session.py. Do not edit."
    ]
    lines += [f"{key} {value}" for key, value in spark_settings().items()]
    path.write_text("\n".join(lines) + "\n")
    return path


def local_session(warehouse: Path = WAREHOUSE_DIR) -> SparkSession:
    """The project's local SparkSession with Delta and a metastore under ``warehouse``.

    Tests pass their own ``warehouse``; settings given here win over spark-defaults.conf,
    and dbt-spark's session method reuses this session (it calls getOrCreate()).
    """
    from pyspark.sql import SparkSession

    warehouse.mkdir(parents=True, exist_ok=True)
    builder = SparkSession.builder.enableHiveSupport()
    for key, value in spark_settings(warehouse).items():
        builder = builder.config(key, value)
    session = builder.getOrCreate()
    session.sparkContext.setLogLevel("WARN")
    return session


def main(argv: list[str]) -> int:
    if argv[1:] == ["write-defaults"]:
        print(f"spark: wrote {write_defaults()}")
        return 0
    print("usage: python -m ingest.core.spark.session write-defaults", file=sys.stderr)
    return 2


if __name__ == "__main__":
    sys.exit(main(sys.argv))
