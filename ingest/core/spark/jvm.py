"""Where the product's JVM jars live, resolved into .cache/jvm: Delta Lake for Spark and gamelake's
log store for the local disk (``make jvm``), and for tables on S3 and a shared metastore, Hadoop's
S3A connector, gamelake's conditional-put log store and the PostgreSQL driver (``make jvm-s3``)."""

from __future__ import annotations

from pathlib import Path

from ingest.core.errors import ConfigError
from ingest.core.settings.paths import JVM_DIR, PROJECT_DIR

DELTA_VERSION = "4.4.0"  # must match the delta-spark wheel
SPARK_BINARY_VERSION = "4.2"  # must match the pyspark wheel
HADOOP_VERSION = "3.5.0"  # must match the pyspark wheel's hadoop-client-api jar
DELTA_JARS_DIR = JVM_DIR / f"delta-{DELTA_VERSION}"
S3A_JARS_DIR = JVM_DIR / f"hadoop-aws-{HADOOP_VERSION}"
LOG_STORE_SOURCE = PROJECT_DIR / "native" / "delta-logstore" / "src"
LOG_STORE_JAR = JVM_DIR / "gamelake-delta-logstore.jar"
LOG_STORE_CLASS = "io.gamelake.delta.ConditionalPutLogStore"
# Delta's log on the local disk: a listing that reads the status only of the entries it returns
LOCAL_LOG_STORE_SOURCE = PROJECT_DIR / "native" / "local-logstore" / "src"
LOCAL_LOG_STORE_JAR = JVM_DIR / "gamelake-local-logstore.jar"
LOCAL_LOG_STORE_CLASS = "io.gamelake.delta.NameListingLogStore"
POSTGRES_JDBC_VERSION = "42.7.14"
POSTGRES_JDBC_JAR = JVM_DIR / f"postgresql-{POSTGRES_JDBC_VERSION}.jar"


def delta_jars() -> list[Path]:
    jars = sorted(DELTA_JARS_DIR.glob("*.jar"))
    if not jars:
        raise ConfigError(f"no Delta jars in {DELTA_JARS_DIR}: run `make jvm`")
    return jars


def s3a_jars() -> list[Path]:
    """hadoop-aws and the AWS SDK bundle: for the driver's (and executors') class path."""
    jars = sorted(S3A_JARS_DIR.glob("*.jar"))
    if not jars:
        raise ConfigError(f"no S3A jars in {S3A_JARS_DIR}: Spark on S3 needs them; run `make jvm-s3`")
    return jars


def local_log_store_jar() -> Path:
    if not LOCAL_LOG_STORE_JAR.is_file():
        raise ConfigError(
            f"no {LOCAL_LOG_STORE_JAR}: Spark lists Delta's local logs through it; run `make jvm`"
        )
    return LOCAL_LOG_STORE_JAR


def log_store_jar() -> Path:
    if not LOG_STORE_JAR.is_file():
        raise ConfigError(f"no {LOG_STORE_JAR}: Spark on S3 commits through it; run `make jvm-s3`")
    return LOG_STORE_JAR


def postgres_jdbc_jar() -> Path:
    if not POSTGRES_JDBC_JAR.is_file():
        raise ConfigError(f"no {POSTGRES_JDBC_JAR}: a PostgreSQL metastore needs it; run `make jvm-s3`")
    return POSTGRES_JDBC_JAR
