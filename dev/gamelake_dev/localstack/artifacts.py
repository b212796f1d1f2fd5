"""JVM artifacts for the local stack, resolved from Maven Central with Maven.

The first run downloads into Maven's local repository and copies into
``.cache/jvm``; later runs find everything there and do nothing.
"""

from __future__ import annotations

import shutil
import subprocess
import tarfile
from pathlib import Path

from ingest.core.errors import StackError
from ingest.core.settings.paths import JVM_DIR, PROJECT_DIR
from ingest.core.spark.jvm import DELTA_JARS_DIR, DELTA_VERSION, SPARK_BINARY_VERSION

KAFKA_VERSION = "4.3.1"
APICURIO_VERSION = "3.3.3"
S3PROXY_VERSION = "4.1.0"

POM_DIR = PROJECT_DIR / "stack" / "maven"
KAFKA_LIBS = JVM_DIR / f"kafka-{KAFKA_VERSION}" / "libs"
APICURIO_HOME = JVM_DIR / f"apicurio-registry-{APICURIO_VERSION}"
S3PROXY_JAR = JVM_DIR / f"s3proxy-{S3PROXY_VERSION}.jar"


def _mvn(args: list[str], cwd: Path, what: str) -> None:
    if shutil.which("mvn") is None:
        raise StackError("Maven (mvn) is not on PATH: install it (apt-get install maven) to fetch JVM jars")
    print(f"jvm: resolving {what} from Maven Central ...", flush=True)
    proc = subprocess.run(["mvn", "-B", "-q", *args], cwd=cwd, capture_output=True, text=True)
    if proc.returncode != 0:
        tail = "\n".join((proc.stdout + proc.stderr).splitlines()[-15:])
        raise StackError(f"Maven could not resolve {what}:\n{tail}")


def _fetch_kafka() -> None:
    if KAFKA_LIBS.is_dir() and any(KAFKA_LIBS.glob("kafka_2.13-*.jar")):
        return
    _mvn(
        [
            "dependency:copy-dependencies",
            f"-Dkafka.version={KAFKA_VERSION}",
            "-DincludeScope=runtime",
            f"-DoutputDirectory={KAFKA_LIBS}",
        ],
        POM_DIR / "kafka",
        f"Apache Kafka {KAFKA_VERSION}",
    )


def _fetch_delta() -> None:
    if DELTA_JARS_DIR.is_dir() and any(DELTA_JARS_DIR.glob("delta-spark_*.jar")):
        return
    # Spark, Hadoop and Parquet come with the pyspark wheel: copy only Delta's own jars.
    _mvn(
        [
            "dependency:copy-dependencies",
            f"-Dspark.binary.version={SPARK_BINARY_VERSION}",
            f"-Ddelta.version={DELTA_VERSION}",
            "-DincludeScope=runtime",
            "-DincludeGroupIds=io.delta",
            f"-DoutputDirectory={DELTA_JARS_DIR}",
        ],
        POM_DIR / "delta",
        f"Delta Lake {DELTA_VERSION} for Spark {SPARK_BINARY_VERSION}",
    )


def _fetch_apicurio() -> None:
    if (APICURIO_HOME / "quarkus-run.jar").is_file():
        return
    download = JVM_DIR / "download"
    _mvn(
        [
            "dependency:copy",
            f"-Dartifact=io.apicurio:apicurio-registry-app:{APICURIO_VERSION}:tar.gz:all",
            f"-DoutputDirectory={download}",
        ],
        POM_DIR,
        f"Apicurio Registry {APICURIO_VERSION}",
    )
    archive = download / f"apicurio-registry-app-{APICURIO_VERSION}-all.tar.gz"
    staging = APICURIO_HOME.with_suffix(".partial")
    shutil.rmtree(staging, ignore_errors=True)
    staging.mkdir(parents=True)
    with tarfile.open(archive) as tar:
        tar.extractall(staging, filter="data")
    staging.rename(APICURIO_HOME)
    archive.unlink()


def _fetch_s3proxy() -> None:
    if S3PROXY_JAR.is_file():
        return
    download = JVM_DIR / "download"
    _mvn(
        [
            "dependency:copy",
            f"-Dartifact=org.gaul:s3proxy:{S3PROXY_VERSION}:jar:jar-with-dependencies",
            f"-DoutputDirectory={download}",
        ],
        POM_DIR,
        f"S3Proxy {S3PROXY_VERSION}",
    )
    (download / f"s3proxy-{S3PROXY_VERSION}-jar-with-dependencies.jar").rename(S3PROXY_JAR)


def fetch_all() -> None:
    """Make sure every JVM artifact is in .cache/jvm. Idempotent."""
    JVM_DIR.mkdir(parents=True, exist_ok=True)
    _fetch_kafka()
    _fetch_delta()
    _fetch_apicurio()
    _fetch_s3proxy()
    print(f"jvm: Kafka, Apicurio Registry, S3Proxy and Delta jars are in {JVM_DIR}")
