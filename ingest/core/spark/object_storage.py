"""Spark's settings for a lakehouse on S3: the same ``s3://bucket/prefix`` the ingest writes under
(``GAMELAKE_INGEST_WAREHOUSE_URI``), reached through Hadoop's S3A connector.

* Credentials: the AWS SDK's default chain (the standard variables, a profile, web identity, a
  role), which also renews temporary credentials. None of them is written into a setting.
* Commits: Delta's log on S3 goes through ``ConditionalPutLogStore`` (native/delta-logstore): each
  new version is a put with ``If-None-Match: *``, as delta-rs does, so Spark and the ingest can
  commit to one table from any number of hosts. Delta 4.4's default for S3 locks in one JVM only.
* ``s3://`` and ``s3a://`` name the same objects: the ingest writes the first, Spark reads both.
"""

from __future__ import annotations

import os

from ingest.core.spark.jvm import LOG_STORE_CLASS, s3a_jars

CREDENTIALS_CHAIN = "software.amazon.awssdk.auth.credentials.DefaultCredentialsProvider"
DEFAULT_REGION = "us-east-1"


def as_s3a(uri: str) -> str:
    """``s3://bucket/prefix`` as Hadoop's S3A names it, without a trailing slash."""
    scheme, _, rest = uri.partition("://")
    if scheme not in ("s3", "s3a") or not rest.strip("/"):
        raise ValueError(f"{uri!r} is not an S3 location: write s3://bucket/prefix")
    return f"s3a://{rest.rstrip('/')}"


def lakehouse_uri() -> str | None:
    return os.environ.get("GAMELAKE_INGEST_WAREHOUSE_URI") or None


def s3_spark_settings(uri: str) -> dict[str, str]:
    """What changes in spark_settings() when the lakehouse lives at ``uri`` on S3."""
    root = as_s3a(uri)
    classpath = ":".join(str(jar) for jar in s3a_jars())
    settings = {
        # On the JVM's own class path, beside Hadoop, not in spark.jars: the SDK is 690 MB.
        "spark.driver.extraClassPath": classpath,
        "spark.executor.extraClassPath": classpath,
        "spark.hadoop.fs.s3.impl": "org.apache.hadoop.fs.s3a.S3AFileSystem",
        "spark.hadoop.fs.s3a.aws.credentials.provider": CREDENTIALS_CHAIN,
        "spark.delta.logStore.s3a.impl": LOG_STORE_CLASS,
        "spark.delta.logStore.s3.impl": LOG_STORE_CLASS,
        "spark.sql.warehouse.dir": f"{root}/spark-warehouse",
        "spark.gamelake.bronze.path": f"{root}/bronze/game_events",
    }
    endpoint = os.environ.get("AWS_ENDPOINT_URL_S3") or os.environ.get("AWS_ENDPOINT_URL")
    if endpoint:  # an S3-compatible server: path-style, in the region the SDK signs for
        settings["spark.hadoop.fs.s3a.endpoint"] = endpoint
        settings["spark.hadoop.fs.s3a.path.style.access"] = "true"
        settings["spark.hadoop.fs.s3a.endpoint.region"] = os.environ.get("AWS_REGION") or DEFAULT_REGION
        if endpoint.startswith("http://"):
            settings["spark.hadoop.fs.s3a.connection.ssl.enabled"] = "false"
    return settings
