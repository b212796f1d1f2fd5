"""The shared metastore's settings: PostgreSQL in place of Derby, the password by reference only."""

from __future__ import annotations

from pathlib import Path

import pytest

from ingest.core.errors import ConfigError
from ingest.core.spark import jvm, session
from ingest.core.spark.metastore import metastore_url

URL = "jdbc:postgresql://10.0.0.5:5432/metastore"


@pytest.fixture
def shared(tmp_path, monkeypatch):
    driver = tmp_path / "postgresql.jar"
    driver.write_bytes(b"")
    monkeypatch.setattr(jvm, "POSTGRES_JDBC_JAR", driver)
    monkeypatch.setenv("GAMELAKE_METASTORE_URL", URL)
    monkeypatch.setenv("GAMELAKE_METASTORE_USER", "analysts")
    monkeypatch.setenv("GAMELAKE_METASTORE_PASSWORD", "pg-secret-value")
    return driver


def test_spark_names_the_shared_metastore_in_place_of_derby(shared):
    settings = session.spark_settings(Path("/w"))
    assert settings["spark.hadoop.javax.jdo.option.ConnectionURL"] == URL
    assert settings["spark.hadoop.javax.jdo.option.ConnectionUserName"] == "analysts"
    assert settings["spark.hadoop.datanucleus.schema.autoCreateAll"] == "false", "made once, not on first use"
    assert settings["spark.driver.extraClassPath"] == str(shared)


def test_the_password_stays_in_the_environment(shared):
    settings = session.spark_settings(Path("/w"))
    password = settings["spark.hadoop.javax.jdo.option.ConnectionPassword"]
    assert password == "${env.GAMELAKE_METASTORE_PASSWORD}"
    assert "pg-secret-value" not in "\n".join(settings.values())


def test_the_driver_joins_the_s3_class_path(shared, tmp_path, monkeypatch):
    s3a = tmp_path / "s3a"
    s3a.mkdir()
    (s3a / "hadoop-aws.jar").write_bytes(b"")
    (tmp_path / "store.jar").write_bytes(b"")
    monkeypatch.setattr(jvm, "S3A_JARS_DIR", s3a)
    monkeypatch.setattr(jvm, "LOG_STORE_JAR", tmp_path / "store.jar")
    settings = session.spark_settings(Path("/w"), "s3://bucket/lake")
    assert settings["spark.driver.extraClassPath"] == f"{s3a / 'hadoop-aws.jar'}:{shared}"


def test_a_url_that_is_not_postgresql_is_refused_by_name(monkeypatch):
    monkeypatch.setenv("GAMELAKE_METASTORE_URL", "jdbc:mysql://host/db")
    with pytest.raises(ConfigError, match=r"GAMELAKE_METASTORE_URL.*jdbc:postgresql://host:port/database"):
        metastore_url()


def test_a_url_without_a_user_is_refused_by_name(shared, monkeypatch):
    monkeypatch.delenv("GAMELAKE_METASTORE_USER")
    with pytest.raises(ConfigError, match="GAMELAKE_METASTORE_USER"):
        session.spark_settings(Path("/w"))


def test_without_the_url_derby_stays_the_default(monkeypatch):
    monkeypatch.delenv("GAMELAKE_METASTORE_URL", raising=False)
    settings = session.spark_settings(Path("/w"))
    assert settings["spark.hadoop.javax.jdo.option.ConnectionURL"].startswith("jdbc:derby:")
