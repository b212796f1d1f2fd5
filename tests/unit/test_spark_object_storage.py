"""Spark's settings for a lakehouse on S3: the same location the ingest uses, no secret in them."""

from __future__ import annotations

from pathlib import Path

import pytest

from ingest.core.errors import ConfigError
from ingest.core.settings.ingest_settings import IngestSettings
from ingest.core.spark import jvm, session
from ingest.core.spark.object_storage import as_s3a, s3_spark_settings


@pytest.fixture
def jars(tmp_path, monkeypatch):
    """Stand-in jar files where ``make jvm-s3`` puts them: only their paths matter here."""
    s3a = tmp_path / "hadoop-aws"
    s3a.mkdir()
    for name in ("hadoop-aws-3.5.0.jar", "bundle-2.35.4.jar"):
        (s3a / name).write_bytes(b"")
    store = tmp_path / "gamelake-delta-logstore.jar"
    store.write_bytes(b"")
    monkeypatch.setattr(jvm, "S3A_JARS_DIR", s3a)
    monkeypatch.setattr(jvm, "LOG_STORE_JAR", store)
    return s3a, store


def test_s3_names_the_same_objects_as_s3a():
    assert as_s3a("s3://bucket/lake/") == "s3a://bucket/lake"
    assert as_s3a("s3a://bucket/lake") == "s3a://bucket/lake"
    for wrong in ("/local/dir", "gs://bucket/lake", "s3://"):
        with pytest.raises(ValueError, match="write s3://bucket/prefix"):
            as_s3a(wrong)


def test_silver_gold_and_bronze_live_under_the_ingests_location(jars, monkeypatch):
    for name in ("AWS_ENDPOINT_URL", "AWS_ENDPOINT_URL_S3", "AWS_REGION"):
        monkeypatch.delenv(name, raising=False)
    settings = s3_spark_settings("s3://bucket/lake")
    assert settings["spark.sql.warehouse.dir"] == "s3a://bucket/lake/spark-warehouse"
    assert settings["spark.gamelake.bronze.path"] == "s3a://bucket/lake/bronze/game_events"
    assert settings["spark.delta.logStore.s3a.impl"] == jvm.LOG_STORE_CLASS
    assert settings["spark.delta.logStore.s3.impl"] == jvm.LOG_STORE_CLASS
    assert "fs.s3a.endpoint" not in " ".join(settings), "real S3: the SDK finds the endpoint"
    ingest = IngestSettings(warehouse_uri="s3://bucket/lake")
    assert (
        ingest.dbt_table_path("silver", "silver_x") == "s3://bucket/lake/spark-warehouse/silver.db/silver_x"
    )


def test_an_s3_compatible_server_is_reached_path_style(jars, monkeypatch):
    monkeypatch.setenv("AWS_ENDPOINT_URL", "http://127.0.0.1:9190")
    monkeypatch.setenv("AWS_REGION", "eu-west-1")
    settings = s3_spark_settings("s3://bucket/lake")
    assert settings["spark.hadoop.fs.s3a.endpoint"] == "http://127.0.0.1:9190"
    assert settings["spark.hadoop.fs.s3a.path.style.access"] == "true"
    assert settings["spark.hadoop.fs.s3a.endpoint.region"] == "eu-west-1"
    assert settings["spark.hadoop.fs.s3a.connection.ssl.enabled"] == "false"


def test_credentials_stay_with_the_aws_chain_and_out_of_the_settings(jars, monkeypatch):
    monkeypatch.setenv("AWS_ACCESS_KEY_ID", "AKIDEXAMPLE")
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "very-secret-value")
    settings = session.spark_settings(Path("/w"), "s3://bucket/lake")
    rendered = "\n".join(f"{key} {value}" for key, value in settings.items())
    assert "very-secret-value" not in rendered and "AKIDEXAMPLE" not in rendered
    assert settings["spark.hadoop.fs.s3a.aws.credentials.provider"].endswith("DefaultCredentialsProvider")


def test_the_s3_lakehouse_keeps_its_own_metastore_and_class_path(jars):
    s3a, store = jars
    settings = session.spark_settings(Path("/w"), "s3://bucket/lake")
    assert "databaseName=/w/s3/metastore_db;" in settings["spark.hadoop.javax.jdo.option.ConnectionURL"]
    assert settings["spark.jars"].endswith(f",{store}")
    assert settings["spark.driver.extraClassPath"].split(":") == [str(p) for p in sorted(s3a.glob("*.jar"))]
    local = session.spark_settings(Path("/w"))
    assert "databaseName=/w/metastore_db;" in local["spark.hadoop.javax.jdo.option.ConnectionURL"]
    assert "extraClassPath" not in " ".join(local) and str(store) not in local["spark.jars"]


def test_missing_jars_name_the_make_target(tmp_path, monkeypatch):
    monkeypatch.setattr(jvm, "S3A_JARS_DIR", tmp_path / "none")
    with pytest.raises(ConfigError, match="make jvm-s3"):
        s3_spark_settings("s3://bucket/lake")


def test_local_and_s3_lakehouses_list_local_delta_logs_through_gamelakes_store(jars, tmp_path, monkeypatch):
    local_store = tmp_path / "gamelake-local-logstore.jar"
    local_store.write_bytes(b"")
    monkeypatch.setattr(jvm, "LOCAL_LOG_STORE_JAR", local_store)
    for settings in (
        session.spark_settings(Path("/w")),
        session.spark_settings(Path("/w"), "s3://bucket/lake"),
    ):
        assert settings["spark.delta.logStore.file.impl"] == jvm.LOCAL_LOG_STORE_CLASS
        assert str(local_store) in settings["spark.jars"].split(",")
    monkeypatch.setattr(jvm, "LOCAL_LOG_STORE_JAR", tmp_path / "none.jar")
    with pytest.raises(ConfigError, match="make jvm"):
        session.spark_settings(Path("/w"))
