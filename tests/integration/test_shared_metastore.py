"""The shared metastore: PostgreSQL behind Spark's Hive client, for dbt from several JVMs at once.

Embedded Derby lets one JVM at a time open the metastore. This test runs dbt in three JVMs
against one PostgreSQL metastore: the `local` target makes a table, then two invocations at once,
the `local` target in its own JVM and the `cluster` target (a Spark Thrift Server on a standalone
cluster), each with the metastore open, read it. On the same cluster, every server the project
starts listens on loopback only.
"""

from __future__ import annotations

import os
import subprocess
import sys
import time
import uuid
from pathlib import Path

import pytest
from gamelake_dev.localstack import process

from ingest.core.settings.paths import PROJECT_DIR
from tests.integration.dbt_support import spark_cluster_running

pytestmark = pytest.mark.integration

DBT = str(Path(sys.executable).parent / "dbt")
SEED = (PROJECT_DIR / "seeds" / "games.csv").read_text().splitlines()[1:]
COUNT_GAMES = "select count(*) as n from {{ ref('games') }}"
LAST_GAME = "select max(game_slug) as last from {{ ref('games') }}"


@pytest.fixture(scope="module")
def metastore_server():
    """The stack's PostgreSQL metastore server, started for these tests unless it runs."""
    from gamelake_dev.localstack import stack
    from gamelake_dev.localstack.metastore import metastore_server

    ports = stack.StackPorts.from_env()
    server = metastore_server(stack.METASTORE_DIR, ports.metastore)
    started = process.start(server)
    try:
        yield ports.shared_metastore
    finally:
        if started:
            process.stop(server)


@pytest.fixture(scope="module")
def metastore(metastore_server):
    """A database of its own on the server, with the metastore's schema: one lakehouse's catalog
    (a catalog shared by two lakehouses is refused, see register_bronze_source.sql)."""
    from ingest.core.spark.metastore import create_schema

    own = metastore_server.with_new_database(f"test_{uuid.uuid4().hex[:12]}")
    with pytest.MonkeyPatch.context() as patch:
        for name, value in own.client_environment().items():
            patch.setenv(name, value)
        create_schema(own.url)
    return own


class Dbt:
    """dbt invocations from a shell, each in its own process and JVM, all on one metastore."""

    def __init__(self, metastore, tmp_path: Path) -> None:
        self.tmp_path = tmp_path
        self.env = {
            **{k: v for k, v in os.environ.items() if not k.startswith(("GAMELAKE_", "AWS_", "SPARK_CONF"))},
            **metastore.client_environment(),
            "GAMELAKE_WAREHOUSE_DIR": str(tmp_path / "warehouse"),  # the tables: a folder all JVMs reach
            "DBT_PROFILES_DIR": str(PROJECT_DIR / "profiles"),
            "DBT_SEND_ANONYMOUS_USAGE_STATS": "false",
        }
        conf_dir = str(tmp_path / "spark-conf")
        written = subprocess.run(
            [sys.executable, "-m", "ingest.core.spark.session", "write-defaults", "--conf-dir", conf_dir],
            env=self.env,
            cwd=PROJECT_DIR,
            capture_output=True,
            text=True,
        )
        assert written.returncode == 0, written.stderr
        self.rendered = Path(conf_dir, "spark-defaults.conf").read_text()
        self.env["SPARK_CONF_DIR"] = conf_dir

    def start(self, name: str, *args: str, **env: str) -> subprocess.Popen[str]:
        logs = self.tmp_path / name
        paths = ["--target-path", str(self.tmp_path / f"target-{name}"), "--log-path", str(logs)]
        return subprocess.Popen(
            [DBT, *args, *paths],
            env={**self.env, **env},
            cwd=PROJECT_DIR,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            text=True,
        )

    def show(self, name: str, query: str, *args: str, **env: str) -> subprocess.Popen[str]:
        return self.start(name, "show", "--inline", query, "--output", "json", *args, **env)


def finished(proc: subprocess.Popen[str]) -> str:
    out, _ = proc.communicate(timeout=600)
    assert proc.returncode == 0, out[-4000:]
    return out


def _last_game() -> str:
    return max(line.split(",")[0] for line in SEED)


@pytest.fixture(scope="module")
def cluster(metastore, tmp_path_factory):
    """The standalone cluster and its Thrift Server, on the shared metastore (started once: a
    cluster costs a minute of the suite's two cores)."""
    with pytest.MonkeyPatch.context() as patch:
        for name, value in metastore.client_environment().items():
            patch.setenv(name, value)
        with spark_cluster_running(tmp_path_factory.mktemp("spark-cluster")) as config:
            yield config


def test_two_dbt_invocations_at_once_on_the_local_and_cluster_targets_share_one_metastore(
    metastore, cluster, tmp_path
):
    dbt = Dbt(metastore, tmp_path)
    assert metastore.url in dbt.rendered
    assert metastore.password() not in dbt.rendered, "the password stays in the environment"
    # One local JVM makes reference.games.
    assert "Completed successfully" in finished(dbt.start("seeding", "seed"))
    on_cluster = {"GAMELAKE_DBT_TARGET": "cluster", "GAMELAKE_THRIFT_PORT": str(cluster.thrift_port)}
    # At once: the cluster's Thrift Server and a local JVM read the table the local target made.
    naming = dbt.show("naming-on-cluster", LAST_GAME, **on_cluster)
    counting = dbt.show("counting-locally", COUNT_GAMES)
    named = finished(naming)
    assert "target='cluster'" in named
    assert f'"last": "{_last_game()}"' in named
    assert f'"n": {len(SEED)}' in finished(counting)

    assert "reference" in metastore.psql('select "NAME" from "DBS"')
    assert "games" in metastore.psql('select "TBL_NAME" from "TBLS"')
    assert not (tmp_path / "warehouse" / "metastore_db").exists(), "no Derby metastore was made"


def test_every_server_the_project_starts_listens_on_loopback_only(cluster, stack, fresh_topic, tmp_path):
    from gamelake_dev.localstack import spark_cluster
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
