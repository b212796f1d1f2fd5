"""The one Spark + Delta configuration of the project.

``spark_settings()`` is the single source. It is used two ways, never copied:

* ``local_session()`` builds a SparkSession from it (tests, the pipeline summary);
* ``write_defaults()`` renders it into the venv's ``pyspark/conf/spark-defaults.conf``,
  which every Spark the venv launches reads, so dbt-spark's ``session`` method
  (the ``local`` target) and the Spark Thrift Server get exactly the same settings.

Run ``python -m ingest.core.spark.session write-defaults`` after the jars are fetched (``make setup``).

For a lakehouse on S3 (``GAMELAKE_INGEST_WAREHOUSE_URI=s3://bucket/prefix``, the ingest's own
setting), ``write-defaults --s3`` renders the same settings plus S3's into a folder of their own,
with a Derby metastore of its own beside it; a shell's ``dbt`` uses them with ``SPARK_CONF_DIR``.
With ``GAMELAKE_METASTORE_URL`` set (ingest/core/spark/metastore.py), every rendering names that
shared metastore in place of Derby; ``write-defaults --conf-dir DIR`` renders into ``DIR``.
"""

from __future__ import annotations

import os
import re
import sys
from pathlib import Path
from typing import TYPE_CHECKING

from ingest.core.settings.paths import WAREHOUSE_DIR, spark_warehouse
from ingest.core.spark.jvm import (
    LOCAL_LOG_STORE_CLASS,
    delta_jars,
    local_log_store_jar,
    log_store_jar,
    postgres_jdbc_jar,
)
from ingest.core.spark.metastore import metastore_url, shared_metastore_settings
from ingest.core.spark.object_storage import lakehouse_uri, s3_spark_settings

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

SPARK_DRIVER_MEMORY = os.environ.get("GAMELAKE_SPARK_MEMORY", "2g")
# The parallel collector in place of G1: on 2 cores G1's concurrent threads took 3.4-6.7 s of a
# warm cycle's CPU against 1.4-2.6 s; its cycles' wall at most 0.2 s above G1's in four pairs
# (bench/results/jvm_cpu.md, stop 64)
DRIVER_GC = "-XX:+UseParallelGC"
# More options for the driver's JVM, after the project's own (a later option wins; one that
# names a collector replaces DRIVER_GC, as the JVM refuses two)
JVM_OPTIONS_VARIABLE = "GAMELAKE_SPARK_JVM_OPTIONS"
# The driver's log4j2 settings: Spark's defaults without the slice's expected replace warnings
LOG_SETTINGS = Path(__file__).with_name("log4j2.properties")


def s3_home(warehouse: Path = WAREHOUSE_DIR) -> Path:
    """The local side of a lakehouse on S3: its Derby metastore and its spark-defaults.conf."""
    return warehouse / "s3"


def spark_settings(warehouse: Path = WAREHOUSE_DIR, lakehouse: str | None = None) -> dict[str, str]:
    """Spark settings for Delta work with a Derby metastore under ``warehouse``; the tables live
    under ``warehouse`` too, or on S3 under ``lakehouse`` (``s3://bucket/prefix``) when given."""
    home = warehouse if lakehouse is None else s3_home(warehouse)
    metastore = home / "metastore_db"
    jars = [*delta_jars(), local_log_store_jar(), *([log_store_jar()] if lakehouse else [])]
    settings = {
        "spark.master": "local[2]",
        "spark.app.name": "gamelake",
        "spark.jars": ",".join(str(jar) for jar in jars),
        "spark.sql.extensions": "io.delta.sql.DeltaSparkSessionExtension",
        "spark.sql.catalog.spark_catalog": "org.apache.spark.sql.delta.catalog.DeltaCatalog",
        "spark.sql.catalogImplementation": "hive",
        "spark.sql.warehouse.dir": str(spark_warehouse(warehouse)),
        "spark.hadoop.javax.jdo.option.ConnectionURL": f"jdbc:derby:;databaseName={metastore};create=true",
        "spark.driver.extraJavaOptions": _driver_jvm_options(home),
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
        # Delta lists a table's _delta_log for almost every statement: read the status of only
        # the entries it needs (native/local-logstore; bench/results/log_listing.md)
        "spark.delta.logStore.file.impl": LOCAL_LOG_STORE_CLASS,
        "spark.sql.execution.arrow.pyspark.enabled": "true",
        # Not a Spark setting: where dbt's on-run-start registers the bronze source.
        "spark.gamelake.bronze.path": os.environ.get(
            "GAMELAKE_BRONZE_PATH", str(warehouse / "bronze" / "game_events")
        ),
    }
    if lakehouse is not None:
        settings.update(s3_spark_settings(lakehouse))
    shared = metastore_url()
    if shared is not None:  # PostgreSQL in place of Derby (ingest/core/spark/metastore.py)
        settings.update(shared_metastore_settings(shared))
        for side in ("driver", "executor"):
            key = f"spark.{side}.extraClassPath"
            settings[key] = ":".join(filter(None, [settings.get(key), str(postgres_jdbc_jar())]))
    return settings


def _driver_jvm_options(home: Path) -> str:
    extra = os.environ.get(JVM_OPTIONS_VARIABLE, "").strip()
    collector = "" if re.search(r"-XX:\+Use\w+GC\b", extra) else DRIVER_GC
    options = [f"-Dderby.system.home={home}", collector, f"-Dlog4j2.configurationFile={LOG_SETTINGS}", extra]
    return " ".join(option for option in options if option)


def defaults_file() -> Path:
    import pyspark

    return Path(pyspark.__file__).parent / "conf" / "spark-defaults.conf"


def write_defaults(lakehouse: str | None = None, conf_dir: Path | None = None) -> Path:
    """Render spark_settings() as the venv's spark-defaults.conf, or into ``conf_dir``, by default
    ``s3_home()/spark-conf`` for a lakehouse on S3."""
    if conf_dir is None and lakehouse is not None:
        conf_dir = s3_home() / "spark-conf"
    path = defaults_file() if conf_dir is None else conf_dir / "spark-defaults.conf"
    path.parent.mkdir(parents=True, exist_ok=True)
    WAREHOUSE_DIR.mkdir(parents=True, exist_ok=True)
    lines = [
        "# Written by `python -m ingest.core.spark.session write-defaults` from "
        "ingest/core/spark/session.py. Do not edit."
    ]
    lines += [f"{key} {value}" for key, value in spark_settings(lakehouse=lakehouse).items()]
    path.write_text("\n".join(lines) + "\n")
    return path


def local_session(warehouse: Path = WAREHOUSE_DIR, lakehouse: str | None = None) -> SparkSession:
    """The project's local SparkSession with Delta and a metastore under ``warehouse``, the tables
    on S3 under ``lakehouse`` when given.

    Tests pass their own ``warehouse``; settings given here win over spark-defaults.conf,
    and dbt-spark's session method reuses this session (it calls getOrCreate()).
    """
    from pyspark.sql import SparkSession

    warehouse.mkdir(parents=True, exist_ok=True)
    builder = SparkSession.builder.enableHiveSupport()
    for key, value in spark_settings(warehouse, lakehouse).items():
        builder = builder.config(key, value)
    session = builder.getOrCreate()
    session.sparkContext.setLogLevel("WARN")
    return session


def main(argv: list[str]) -> int:
    if argv[1:] == ["write-defaults"]:
        print(f"spark: wrote {write_defaults()}")
        return 0
    if argv[1:] == ["write-defaults", "--s3"]:
        lakehouse = lakehouse_uri()
        if lakehouse is None:
            print("spark: set GAMELAKE_INGEST_WAREHOUSE_URI=s3://bucket/prefix first", file=sys.stderr)
            return 2
        return _written(write_defaults(lakehouse), f" for {lakehouse}")
    if argv[1:3] == ["write-defaults", "--conf-dir"] and len(argv) == 4:
        return _written(write_defaults(lakehouse_uri(), Path(argv[3])), "")
    usage = "usage: python -m ingest.core.spark.session write-defaults [--s3 | --conf-dir DIR]"
    print(usage, file=sys.stderr)
    return 2


def _written(path: Path, what: str) -> int:
    print(f"spark: wrote {path}{what}; dbt from a shell reads it with:")
    print(f"export SPARK_CONF_DIR={path.parent}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
