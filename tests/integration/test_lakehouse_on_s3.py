"""The whole lakehouse on the local S3 server: Spark's commits there are conditional puts, safe
beside delta-rs's, and the pipeline runs end to end (produce -> ingest -> dbt build -> status)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections import Counter

import pyarrow as pa
import pytest
from deltalake import DeltaTable
from gamelake_dev.localstack.object_store import client
from gamelake_dev.producer.datagen import EventGenerator
from gamelake_dev.producer.publish import publish

from ingest.core.settings.object_storage import s3_access
from ingest.core.settings.paths import PROJECT_DIR
from ingest.landing.delta.table_scan import scan
from tests.integration.ingest_support import assert_exactly_once_on_s3, ingest_cli, run_service, service_env

pytestmark = pytest.mark.integration

GAMES = ["space_raiders", "kart_legends", "dungeon_depths", "puzzle_pop"]  # the active games of the seed


def _spark(tmp_path, *args: str) -> subprocess.CompletedProcess[str]:
    done = subprocess.run(
        [sys.executable, "-m", "tests.integration.s3_spark_appender", str(tmp_path / "spark"), *args],
        env=dict(os.environ),
        cwd=PROJECT_DIR,
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    return done


def test_spark_creates_a_log_version_with_a_conditional_put(on_s3, local_s3, tmp_path):
    uri = f"{on_s3}/_delta_log/00000000000000000000.json"
    lines = dict(line.split(": ", 1) for line in _spark(tmp_path, uri, "--create-twice").stdout.splitlines())
    # Delta retries a commit at the next version on exactly this exception.
    refused, _, cause = lines["second"].partition(" caused by ")
    assert refused == "java.nio.file.FileAlreadyExistsException"
    assert cause == "org.apache.hadoop.fs.s3a.RemoteFileChangedException"
    assert "412" in lines["cause"], "the server refused the put, not a check made before it"
    assert lines["kept"] == '{"first":1}'
    key = uri.removeprefix(f"s3://{local_s3.bucket}/")
    assert client(local_s3).get_object(Bucket=local_s3.bucket, Key=key)["Body"].read() == b'{"first":1}\n'


def test_spark_and_delta_rs_append_to_one_table_on_s3_at_once_and_lose_nothing(on_s3, tmp_path):
    uri = f"{on_s3}/events"
    options = s3_access(uri).delta_rs_options()
    schema = pa.schema([("writer", pa.string()), ("index", pa.int64())])
    DeltaTable.create(uri, schema, storage_options=options)
    per_writer = 25
    delta_rs = subprocess.Popen(
        [sys.executable, "-m", "tests.integration.s3_appender", uri, "delta-rs", str(per_writer)],
        env=dict(os.environ),
        cwd=PROJECT_DIR,
        stderr=subprocess.PIPE,
        text=True,
    )
    _spark(tmp_path, uri, "spark", str(per_writer))
    _, err = delta_rs.communicate(timeout=300)
    assert delta_rs.returncode == 0, err

    table = DeltaTable(uri, storage_options=options)
    assert table.version() == 2 * per_writer, "one version per append, none overwritten"
    rows = scan(table).to_pylist()
    assert sorted((r["writer"], r["index"]) for r in rows) == sorted(
        (name, index) for name in ("delta-rs", "spark") for index in range(per_writer)
    )
    engines = Counter(str(entry.get("engineInfo", "")).split("/")[0] for entry in table.history())
    assert engines["Apache-Spark"] == per_writer, engines


def test_the_pipeline_runs_end_to_end_on_s3(stack, fresh_topic, on_s3, tmp_path):
    events = list(EventGenerator(GAMES, [1, 2, 3], seed=31).events(3000))
    assert publish(stack.endpoints(fresh_topic), iter(events), [1, 2, 3], progress=False).delivered == 3000
    env = service_env(stack, fresh_topic, tmp_path / "local", warehouse_uri=on_s3)
    assert run_service(env, log=tmp_path / "ingest.log") == 0, (tmp_path / "ingest.log").read_text()[-3000:]
    assert_exactly_once_on_s3(on_s3, stack.bootstrap_servers, fresh_topic)

    # dbt's Spark reads bronze and writes silver and gold on S3; only its Derby metastore is local.
    env |= {
        "GAMELAKE_WAREHOUSE_DIR": str(tmp_path / "local"),
        "DBT_TARGET_PATH": str(tmp_path / "target"),
        "DBT_LOG_PATH": str(tmp_path / "dbt-logs"),
    }
    built = ingest_cli(env, "dbt-build")
    assert built.returncode == 0, built.stdout[-4000:] + built.stderr[-2000:]
    assert sorted(p.name for p in (tmp_path / "local").iterdir()) == ["s3"], "no table on the local disk"

    options = s3_access(on_s3).delta_rs_options()
    per_game = Counter(event.game_name for event in events)
    tables = f"{on_s3}/spark-warehouse"
    for game in GAMES:
        silver = DeltaTable(f"{tables}/silver.db/silver_{game}", storage_options=options)
        ids = scan(silver, ["event_id"])["event_id"].to_pylist()
        assert sorted(ids) == sorted(e.event_id for e in events if e.game_name == game), game
        assert len(ids) == per_game[game]
        players = DeltaTable(f"{tables}/gold.db/gold_{game}_player_agg", storage_options=options)
        gamers = {e.gamer_id for e in events if e.game_name == game}
        assert sorted(scan(players, ["gamer_id"])["gamer_id"].to_pylist()) == sorted(gamers), game
    # dbt-build held the build lock with delta-rs (dbt's hooks left it alone) and released it
    lock = DeltaTable(f"{tables}/silver.db/gamelake_build_lock", storage_options=options)
    assert scan(lock).num_rows == 0
    takes = [c for c in lock.history() if c["operation"] in ("MERGE", "DELETE")]
    assert len(takes) == 2 and all(str(c.get("clientVersion")).startswith("delta-rs") for c in takes), takes

    # An analyst's dbt from a shell on these tables (SPARK_CONF_DIR from `write-defaults --s3`)
    # runs in test_migration_on_s3.py.
    status = ingest_cli(env, "status", "--json", timeout=120)
    report = json.loads(status.stdout)
    assert report["dbt_tables_dir"] == f"{on_s3}/spark-warehouse"
    assert status.returncode == 0, report["anomalies"]
    for game in GAMES:
        assert report["silver"][game]["rows"] == per_game[game]
        assert report["silver"][game]["freshness_s"] == 0 and report["gold"][game]["freshness_s"] == 0


def test_dbt_build_on_the_cluster_target_puts_silver_and_gold_on_s3(
    on_s3, tmp_path, tmp_path_factory, monkeypatch
):
    """`make cluster-up` with GAMELAKE_INGEST_WAREHOUSE_URI: the Thrift Server's driver and the
    worker's executors read bronze on S3 and write silver and gold there, through S3A, exactly:
    each event once, at its first landing's offset, however often the producer retried it."""
    import random
    from datetime import UTC, datetime, timedelta

    import requests
    from dbt.cli.main import dbtRunner
    from deltalake import write_deltalake
    from gamelake_dev.localstack import spark_cluster

    from ingest.games import model_files
    from tests.integration import dbt_support as support

    game = "orbit_golf"
    project = support.copy_project(tmp_path / "project")
    support.write_seed(project, {game: True})
    model_files.sync(project)
    writer = support.BronzeWriter(random.Random(7))
    landed_at = datetime.now(UTC).replace(tzinfo=None, microsecond=0) - timedelta(hours=2)
    rows = [
        writer.event([game, "unknown_game"][i % 2], 4, landed_at + timedelta(seconds=i)) for i in range(60)
    ]
    rows += [writer.retry(rows[i], landed_at + timedelta(minutes=30)) for i in range(0, 20, 2)]  # late copies
    options = s3_access(on_s3).delta_rs_options()
    write_deltalake(  # as the ingest creates it: silver reads bronze's change data feed
        f"{on_s3}/bronze/game_events",
        support.arrow_bronze(rows, 4),
        partition_by=["event_date"],
        configuration={"delta.enableChangeDataFeed": "true"},
        storage_options=options,
    )
    monkeypatch.setenv("GAMELAKE_INGEST_WAREHOUSE_URI", on_s3)
    monkeypatch.delenv("GAMELAKE_BRONZE_PATH", raising=False)  # the cluster's settings name bronze on S3
    with support.spark_cluster_running(tmp_path_factory.mktemp("spark-cluster-s3")) as cluster:
        monkeypatch.setenv("GAMELAKE_THRIFT_PORT", str(cluster.thrift_port))
        where = ["--project-dir", str(project), "--profiles-dir", str(project / "profiles")]
        result = dbtRunner().invoke(["build", *where, "--target", "cluster"])
        assert result.success, result.exception or [
            f"{r.node.name}: {r.message}" for r in result.result.results if str(r.status) in ("error", "fail")
        ]
        state = requests.get(f"http://{spark_cluster.HOST}:{cluster.master_ui_port}/json/", timeout=5).json()
        apps = {app["name"]: app for app in state["activeapps"]}
        assert state["aliveworkers"] == 1 and apps["gamelake-thrift"]["cores"] > 0, "it ran distributed"

    tables = f"{on_s3}/spark-warehouse"
    expected = support.expected_silver(rows, game)
    silver = DeltaTable(f"{tables}/silver.db/silver_{game}", storage_options=options)
    landed = scan(silver, ["event_id", "kafka_offset"]).to_pylist()
    assert {r["event_id"]: r["kafka_offset"] for r in landed} == {
        event_id: row["_kafka_offset"] for event_id, row in expected.items()
    }
    players = DeltaTable(f"{tables}/gold.db/gold_{game}_player_agg", storage_options=options)
    got = {
        r["gamer_id"]: (r["event_count"], r["session_count"]) for r in players.to_pyarrow_table().to_pylist()
    }
    want = support.expected_player_agg(expected)
    assert got == {g: (p["event_count"], p["session_count"]) for g, p in want.items()}
