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
from ingest.core.spark.jvm import (
    DELTA_JARS_DIR,
    DELTA_VERSION,
    HADOOP_VERSION,
    LOCAL_LOG_STORE_JAR,
    LOCAL_LOG_STORE_SOURCE,
    LOG_STORE_JAR,
    LOG_STORE_SOURCE,
    POSTGRES_JDBC_JAR,
    POSTGRES_JDBC_VERSION,
    S3A_JARS_DIR,
    SPARK_BINARY_VERSION,
)

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


def _fetch_s3a() -> None:
    if any(S3A_JARS_DIR.glob("hadoop-aws-*.jar")):
        return
    _mvn(
        [
            "dependency:copy-dependencies",
            f"-Dhadoop.version={HADOOP_VERSION}",
            "-DincludeScope=runtime",
            f"-DoutputDirectory={S3A_JARS_DIR}",
        ],
        POM_DIR / "hadoop-aws",
        f"Hadoop's S3A connector {HADOOP_VERSION} and the AWS SDK (about 690 MB, once)",
    )


def _pyspark_jars() -> Path:
    import pyspark

    jars = Path(pyspark.__file__).parent / "jars"
    if not (jars / f"hadoop-client-api-{HADOOP_VERSION}.jar").is_file():
        found = ", ".join(p.name for p in jars.glob("hadoop-client-api-*.jar")) or "none"
        raise StackError(
            f"the pyspark wheel's Hadoop is {found}, not {HADOOP_VERSION}: set HADOOP_VERSION in "
            "ingest/core/spark/jvm.py to match it, so that hadoop-aws matches Hadoop"
        )
    return jars


def _build_log_store() -> None:
    """Compile the conditional-put log store (native/delta-logstore) against the jars it runs with."""
    _build_jar(LOG_STORE_SOURCE, LOG_STORE_JAR, [*S3A_JARS_DIR.glob("hadoop-aws-*.jar")])


def _build_local_log_store() -> None:
    """Compile the local disk's log store (native/local-logstore) against the jars it runs with."""
    _build_jar(LOCAL_LOG_STORE_SOURCE, LOCAL_LOG_STORE_JAR, [])


def _build_jar(source: Path, jar: Path, more_classpath: list[Path]) -> None:
    """Compile the Java sources under ``source`` into ``jar`` against Hadoop and Delta's storage
    jars (and ``more_classpath``), unless the jar is newer than every source."""
    sources = sorted(source.rglob("*.java"))
    newest = max(path.stat().st_mtime for path in sources)
    if jar.is_file() and jar.stat().st_mtime >= newest:
        return
    for tool in ("javac", "jar"):
        if shutil.which(tool) is None:
            raise StackError(f"{tool} is not on PATH: install a JDK (openjdk-17-jdk-headless)")
    classpath = [
        _pyspark_jars() / f"hadoop-client-api-{HADOOP_VERSION}.jar",
        *DELTA_JARS_DIR.glob("delta-storage-*.jar"),
        *more_classpath,
    ]
    classes = JVM_DIR / f"{jar.stem}-classes"
    shutil.rmtree(classes, ignore_errors=True)
    compiled = subprocess.run(
        ["javac", "--release", "17", "-Xlint:all", "-Werror", "-d", str(classes),
         "-cp", ":".join(str(path) for path in classpath), *map(str, sources)],
        capture_output=True,
        text=True,
    )  # fmt: skip
    if compiled.returncode != 0:
        raise StackError(f"javac could not compile {source}:\n{compiled.stderr.strip()}")
    staging = jar.with_suffix(".partial")
    subprocess.run(["jar", "cf", str(staging), "-C", str(classes), "."], check=True)
    staging.rename(jar)
    shutil.rmtree(classes)
    print(f"jvm: built {jar.name} from {source.relative_to(PROJECT_DIR)}", flush=True)


def copy_artifact(artifact: str, target: Path, what: str) -> None:
    """Resolve one jar, ``group:name:version``, from Maven Central into ``target`` (a file)."""
    download = JVM_DIR / "download"
    _mvn(["dependency:copy", f"-Dartifact={artifact}", f"-DoutputDirectory={download}"], POM_DIR, what)
    target.parent.mkdir(parents=True, exist_ok=True)
    name = artifact.split(":")[1] + "-" + artifact.split(":")[2] + ".jar"
    (download / name).rename(target)


def _fetch_postgres_jdbc() -> None:
    if not POSTGRES_JDBC_JAR.is_file():
        copy_artifact(
            f"org.postgresql:postgresql:{POSTGRES_JDBC_VERSION}",
            POSTGRES_JDBC_JAR,
            f"the PostgreSQL JDBC driver {POSTGRES_JDBC_VERSION}",
        )


def fetch_s3() -> None:
    """What Spark needs for tables on S3 and a shared metastore: S3A, the log store, the PostgreSQL
    driver. Idempotent; after ``fetch_all``."""
    fetch_all()
    _fetch_s3a()
    _build_log_store()
    _fetch_postgres_jdbc()
    print(f"jvm: S3A jars in {S3A_JARS_DIR}, the log store in {LOG_STORE_JAR}")


def fetch_all() -> None:
    """Make sure every JVM artifact is in .cache/jvm. Idempotent."""
    JVM_DIR.mkdir(parents=True, exist_ok=True)
    _fetch_kafka()
    _fetch_delta()
    _build_local_log_store()
    _fetch_apicurio()
    _fetch_s3proxy()
    print(f"jvm: Kafka, Apicurio Registry, S3Proxy, Delta and the local log store's jars are in {JVM_DIR}")
