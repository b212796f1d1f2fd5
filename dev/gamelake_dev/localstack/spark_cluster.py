"""A real, small Spark cluster on loopback: standalone master + worker + Spark Thrift Server.

dbt's ``cluster`` target (method thrift) talks to the Thrift Server, whose driver runs on
the master and whose executors run on the worker, so ``dbt build --target cluster`` is a
distributed run. Everything comes from the pyspark wheel (spark-class, spark-submit and the
thriftserver jar) and the project's one Spark configuration (``ingest.core.spark.session.spark_settings``),
passed as ``--conf``; only the master URL, the heaps and a private metastore differ: Derby
allows one JVM per metastore, and the embedded ``local`` target owns ``warehouse/``. With a shared
metastore (``GAMELAKE_METASTORE_URL``) the cluster uses it too, and sees the ``local`` target's
tables; with ``GAMELAKE_INGEST_WAREHOUSE_URI`` its tables are on S3.

    python -m gamelake_dev.localstack.spark_cluster up|down|status

Ports: GAMELAKE_SPARK_MASTER_PORT (7177), GAMELAKE_SPARK_MASTER_UI_PORT (8181),
GAMELAKE_SPARK_WORKER_PORT (7178), GAMELAKE_SPARK_WORKER_UI_PORT (8182), GAMELAKE_THRIFT_PORT (10011).
"""

from __future__ import annotations

import contextlib
import os
import socket
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import requests

from gamelake_dev.localstack import process
from gamelake_dev.localstack.bind import bind_host
from ingest.core.errors import ConfigError, IngestError
from ingest.core.settings.paths import STACK_DIR, WAREHOUSE_DIR
from ingest.core.spark.jvm import delta_jars, local_log_store_jar, log_store_jar
from ingest.core.spark.object_storage import lakehouse_uri

HOST = bind_host()
PORT_VARIABLES = {
    "GAMELAKE_SPARK_MASTER_PORT": 7177,
    "GAMELAKE_SPARK_MASTER_UI_PORT": 8181,
    "GAMELAKE_SPARK_WORKER_PORT": 7178,
    "GAMELAKE_SPARK_WORKER_UI_PORT": 8182,
    "GAMELAKE_THRIFT_PORT": 10011,
}
DAEMON_MEMORY = "512m"  # master and worker daemons themselves
WORKER_MEMORY = "2g"  # what the worker offers to executors
EXECUTOR_MEMORY = "1g"
THRIFT_DRIVER_MEMORY = "1g"
# Settings of ingest.core.spark.session that the cluster replaces: it has its own master and heaps.
CLUSTER_OWNED = {"spark.master", "spark.app.name", "spark.driver.memory"}


@dataclass(frozen=True)
class ClusterConfig:
    """Where the cluster listens and keeps its state."""

    master_port: int
    master_ui_port: int
    worker_port: int
    worker_ui_port: int
    thrift_port: int
    state_dir: Path
    warehouse: Path

    @classmethod
    def from_env(cls) -> ClusterConfig:
        master, master_ui, worker, worker_ui, thrift = (_port(n, d) for n, d in PORT_VARIABLES.items())
        if len({master, master_ui, worker, worker_ui, thrift}) != len(PORT_VARIABLES):
            raise ConfigError(f"the Spark cluster's ports must differ: {', '.join(PORT_VARIABLES)}")
        state_dir = Path(os.environ.get("GAMELAKE_SPARK_CLUSTER_DIR", STACK_DIR / "spark-cluster"))
        return cls(master, master_ui, worker, worker_ui, thrift, state_dir, state_dir / "warehouse")

    @property
    def master_url(self) -> str:
        return f"spark://{HOST}:{self.master_port}"


def _port(name: str, default: int) -> int:
    raw = os.environ.get(name, str(default))
    if not raw.isdigit() or not 1024 <= int(raw) <= 65535:
        raise ConfigError(f"{name}={raw!r} is not a port: use a number from 1024 to 65535")
    return int(raw)


def _spark_home() -> Path:
    import pyspark

    return Path(pyspark.__file__).parent


def _listening(port: int) -> bool:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.settimeout(1.0)
        return sock.connect_ex((HOST, port)) == 0


def _alive_workers(config: ClusterConfig) -> int:
    try:
        state = requests.get(f"http://{HOST}:{config.master_ui_port}/json/", timeout=2).json()
    except (requests.RequestException, ValueError):
        return 0
    return int(state.get("aliveworkers", 0))


def _env() -> dict[str, str]:
    return {
        "SPARK_HOME": str(_spark_home()),
        "SPARK_DAEMON_MEMORY": DAEMON_MEMORY,
        "SPARK_NO_DAEMONIZE": "1",
        # The web UIs (and executors' block managers) bind to SPARK_LOCAL_IP, else every interface.
        "SPARK_LOCAL_IP": HOST,
    }


def _thrift_conf(config: ClusterConfig) -> list[str]:
    from ingest.core.spark.session import spark_settings

    lakehouse = lakehouse_uri()
    settings = spark_settings(config.warehouse, lakehouse)
    if lakehouse is None:  # bronze is the project's, wherever the metastore lives
        settings["spark.gamelake.bronze.path"] = spark_settings(WAREHOUSE_DIR)["spark.gamelake.bronze.path"]
    # The Thrift Server resolves data sources through the JVM's class path, not spark.jars' loader;
    # S3A's jars and a shared metastore's driver are there already.
    jars = [str(jar) for jar in [*delta_jars(), local_log_store_jar()]]
    if lakehouse is not None:
        jars.append(str(log_store_jar()))
    class_path = ":".join(filter(None, [*jars, settings.get("spark.driver.extraClassPath")]))
    settings |= {
        "spark.driver.extraClassPath": class_path,
        "spark.executor.extraClassPath": class_path,
        "spark.executor.memory": EXECUTOR_MEMORY,
        # one host: waiting for a "more local" executor (3s by default per task set) only adds latency
        "spark.locality.wait": "0s",
        "spark.cores.max": "2",
        "spark.driver.host": HOST,
        "spark.driver.bindAddress": HOST,
    }
    args = []
    for key, value in settings.items():
        if key not in CLUSTER_OWNED:
            args += ["--conf", f"{key}={value}"]
    return args


def servers(config: ClusterConfig) -> list[process.Server]:
    """Master, worker and Thrift Server, in start order."""
    # command lines read best as flag/value pairs
    # fmt: off
    bin_dir = _spark_home() / "bin"
    master = process.Server(
        name="spark-master",
        command=[
            str(bin_dir / "spark-class"), "org.apache.spark.deploy.master.Master",
            "--host", HOST, "--port", str(config.master_port), "--webui-port", str(config.master_ui_port),
        ],
        ports={"master": config.master_port, "master ui": config.master_ui_port},
        state_dir=config.state_dir,
        healthy=lambda: _listening(config.master_port) and _listening(config.master_ui_port),
        env=_env(),
    )
    worker = process.Server(
        name="spark-worker",
        command=[
            str(bin_dir / "spark-class"), "org.apache.spark.deploy.worker.Worker", config.master_url,
            "--host", HOST, "--port", str(config.worker_port), "--webui-port", str(config.worker_ui_port),
            "--cores", "2", "--memory", WORKER_MEMORY, "--work-dir", str(config.state_dir / "work"),
        ],
        ports={"worker": config.worker_port, "worker ui": config.worker_ui_port},
        state_dir=config.state_dir,
        healthy=lambda: _alive_workers(config) >= 1,
        env=_env(),
    )
    thrift = process.Server(
        name="spark-thrift",
        command=[
            str(bin_dir / "spark-submit"),
            "--master", config.master_url,
            "--class", "org.apache.spark.sql.hive.thriftserver.HiveThriftServer2",
            "--name", "gamelake-thrift",
            "--driver-memory", THRIFT_DRIVER_MEMORY,
            *_thrift_conf(config),
            "--hiveconf", f"hive.server2.thrift.port={config.thrift_port}",
            "--hiveconf", f"hive.server2.thrift.bind.host={HOST}",
            "--hiveconf", "hive.server2.authentication=NOSASL",
            "spark-internal",
        ],
        ports={"thrift": config.thrift_port},
        state_dir=config.state_dir,
        healthy=lambda: _listening(config.thrift_port),
        env=_env(),
        startup_timeout_s=180.0,
    )
    # fmt: on
    return [master, worker, thrift]


def up(config: ClusterConfig) -> list[process.Server]:
    """Start what is not running yet. Returns the servers started now (to stop them again)."""
    config.warehouse.mkdir(parents=True, exist_ok=True)
    started = []
    for server in servers(config):
        if process.start(server):
            started.append(server)
        print(f"{server.name}: running; log {server.log_file}", flush=True)
    print(f"spark cluster: master {config.master_url}, thrift {HOST}:{config.thrift_port}")
    return started


@contextlib.contextmanager
def running(config: ClusterConfig) -> Iterator[ClusterConfig]:
    """The cluster on ``config`` for a block; what was started for it is stopped after."""
    started = up(config)
    try:
        yield config
    finally:
        for server in reversed(started):
            process.stop(server)


def down(config: ClusterConfig) -> None:
    for server in reversed(servers(config)):
        print(f"{server.name}: {'stopped' if process.stop(server) else 'not running'}")


def status(config: ClusterConfig) -> bool:
    ok = True
    for server in servers(config):
        healthy = server.pid() is not None and server.healthy()
        ok &= healthy
        state = "healthy" if healthy else "not running or not healthy"
        print(f"{server.name}: {state}; log {server.log_file}")
    return ok


def main(argv: list[str]) -> int:
    verb = argv[1] if len(argv) > 1 else ""
    if verb not in ("up", "down", "status"):
        print("usage: python -m gamelake_dev.localstack.spark_cluster up|down|status", file=sys.stderr)
        return 2
    try:
        config = ClusterConfig.from_env()
        if verb == "up":
            up(config)
        elif verb == "down":
            down(config)
        else:
            return 0 if status(config) else 1
    except IngestError as err:
        print(f"spark cluster: {err}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
