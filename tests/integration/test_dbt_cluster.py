"""`dbt build --target cluster` on a real distributed Spark: standalone master + worker + Thrift Server.

The cluster is started and stopped by project code (gamelake_dev.localstack.spark_cluster) on
loopback, with a private state folder and metastore. Bronze is written with delta-rs, as the
ingest service writes it; the results are read back through the Thrift Server and compared
with expectations computed in Python.
"""

from __future__ import annotations

import os
import random
import time
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
from gamelake_dev.localstack import spark_cluster

from ingest.games import model_files as games
from tests.integration import dbt_support as support

pytestmark = [pytest.mark.integration, pytest.mark.slow]

GAMES = {"orbit_golf": True}  # one game keeps the (slower, networked) cluster build short


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[spark_cluster.ClusterConfig]:
    with support.spark_cluster_running(tmp_path_factory.mktemp("spark-cluster")) as config:
        yield config


def _query(config: spark_cluster.ClusterConfig, sql: str) -> list[tuple[Any, ...]]:
    from pyhive import hive

    with hive.connect(host=spark_cluster.HOST, port=config.thrift_port, auth="NOSASL") as conn:
        cursor = conn.cursor()
        cursor.execute(sql)
        return list(cursor.fetchall())


def test_dbt_build_on_the_cluster_target_is_exact(
    cluster: spark_cluster.ClusterConfig, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from dbt.cli.main import dbtRunner

    project = support.copy_project(tmp_path / "project")
    support.write_seed(project, GAMES)
    games.sync(project)
    writer = support.BronzeWriter(random.Random(7))
    landed_at = datetime.now(UTC).replace(tzinfo=None, microsecond=0) - timedelta(hours=2)
    rows = [
        writer.event([*GAMES, "unknown_game"][i % 2], 4, landed_at + timedelta(seconds=i)) for i in range(60)
    ]
    rows += [writer.retry(rows[i], landed_at + timedelta(minutes=30)) for i in range(0, 20, 2)]
    from deltalake import write_deltalake

    bronze = tmp_path / "bronze" / "game_events"
    write_deltalake(  # as the ingest creates it: silver reads bronze's change data feed
        str(bronze),
        support.arrow_bronze(rows, 4),
        partition_by=["event_date"],
        configuration={"delta.enableChangeDataFeed": "true"},
    )
    monkeypatch.setenv("GAMELAKE_BRONZE_PATH", str(bronze))
    monkeypatch.setenv("GAMELAKE_THRIFT_PORT", str(cluster.thrift_port))

    result = dbtRunner().invoke(
        [
            "build",
            "--project-dir",
            str(project),
            "--profiles-dir",
            str(project / "profiles"),
            "--target",
            "cluster",
        ]
    )

    assert result.success, result.exception or [
        f"{r.node.name}: {r.message}" for r in result.result.results if str(r.status) in ("error", "fail")
    ]
    for game in GAMES:
        expected = support.expected_silver(rows, game)
        silver = dict(_query(cluster, f"select event_id, kafka_offset from silver.silver_{game}"))
        assert silver == {event_id: row["_kafka_offset"] for event_id, row in expected.items()}
        players = {
            gamer: (events, sessions)
            for gamer, events, sessions in _query(
                cluster, f"select gamer_id, event_count, session_count from gold.gold_{game}_player_agg"
            )
        }
        want = support.expected_player_agg(expected)
        assert players == {g: (p["event_count"], p["session_count"]) for g, p in want.items()}
    # the work ran distributed: the Thrift Server is an application of the master with executor cores
    import requests

    state = requests.get(f"http://{spark_cluster.HOST}:{cluster.master_ui_port}/json/", timeout=5).json()
    apps = {app["name"]: app for app in state["activeapps"]}
    assert state["aliveworkers"] == 1 and apps["gamelake-thrift"]["cores"] > 0


def test_every_server_the_project_starts_listens_on_loopback_only(
    cluster: spark_cluster.ClusterConfig, stack: Any, fresh_topic: str, tmp_path: Path
) -> None:
    from gamelake_dev.localstack.stack import StackPorts, servers
    from gamelake_dev.producer.publish import ensure_topic

    from tests.integration.ingest_support import service_env, start_service
    from tests.integration.listening_sockets import descendants, is_loopback, listening

    ensure_topic(stack.endpoints(fresh_topic), 1)
    metrics_port = 9390
    service = start_service(service_env(stack, fresh_topic, tmp_path, metrics_port=metrics_port))
    try:
        ports = StackPorts.from_env()
        started = [*servers(ports), *spark_cluster.servers(cluster)]
        roots = {pid for server in started if (pid := server.pid()) is not None} | {service.pid, os.getpid()}
        expected = {
            ports.kafka, ports.kafka_controller, ports.kafka_sasl_ssl, ports.registry,
            ports.registry_management, cluster.master_port, cluster.master_ui_port, cluster.worker_port,
            cluster.worker_ui_port, cluster.thrift_port, metrics_port,
        }  # fmt: skip
        deadline = time.monotonic() + 30
        while not expected <= set(sockets := listening(descendants(roots))) and time.monotonic() < deadline:
            time.sleep(0.5)  # the service opens its metrics port once it is up
    finally:
        service.terminate()
        service.wait(timeout=30)
    assert expected <= set(sockets), f"not listening: {sorted(expected - set(sockets))}"
    exposed = {port: host for port, host in sockets.items() if not is_loopback(host)}
    assert not exposed, f"listening beyond loopback: {exposed}"
