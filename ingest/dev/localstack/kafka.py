"""A single-node Apache Kafka broker in KRaft mode, from Kafka's own jars."""

from __future__ import annotations

import logging
import subprocess
import uuid
from pathlib import Path
from typing import Any

from confluent_kafka.admin import AdminClient

from ingest.core.errors import StackError
from ingest.dev.localstack.artifacts import KAFKA_LIBS
from ingest.dev.localstack.java import java_for
from ingest.dev.localstack.process import Server

KAFKA_HEAP = "-Xms256m -Xmx512m"


def _properties(port: int, controller_port: int, data_dir: Path) -> str:
    return f"""\
process.roles=broker,controller
node.id=1
controller.quorum.voters=1@127.0.0.1:{controller_port}
listeners=PLAINTEXT://127.0.0.1:{port},CONTROLLER://127.0.0.1:{controller_port}
advertised.listeners=PLAINTEXT://127.0.0.1:{port}
controller.listener.names=CONTROLLER
inter.broker.listener.name=PLAINTEXT
listener.security.protocol.map=CONTROLLER:PLAINTEXT,PLAINTEXT:PLAINTEXT
log.dirs={data_dir}
num.partitions=6
auto.create.topics.enable=false
offsets.topic.replication.factor=1
offsets.topic.num.partitions=6
transaction.state.log.replication.factor=1
transaction.state.log.min.isr=1
share.coordinator.state.topic.replication.factor=1
share.coordinator.state.topic.min.isr=1
group.initial.rebalance.delay.ms=0
log.retention.hours=168
"""


_LOG4J2 = """\
appender.out.type=Console
appender.out.name=STDOUT
appender.out.layout.type=PatternLayout
appender.out.layout.pattern=[%d] %p %m (%c)%n
rootLogger.level=INFO
rootLogger.appenderRef.out.ref=STDOUT
logger.kafka.name=kafka
logger.kafka.level=WARN
logger.apache.name=org.apache.kafka
logger.apache.level=WARN
"""


def _healthy(port: int) -> bool:
    conf: dict[str, Any] = {"bootstrap.servers": f"127.0.0.1:{port}", "log_level": 0, "logger": _QUIET}
    admin = AdminClient(conf)
    try:
        admin.list_topics(timeout=2)
    except Exception:
        return False
    return True


# librdkafka logs connection refusals while the broker boots; they are expected here.
_QUIET = logging.getLogger("gamelake.stack.kafka-probe")
_QUIET.addHandler(logging.NullHandler())
_QUIET.propagate = False


def _format_storage(config: Path, data_dir: Path, classpath: str, java: str) -> None:
    if (data_dir / "meta.properties").exists():
        return
    cluster_id = _cluster_id()
    proc = subprocess.run(
        [java, "-cp", classpath, "kafka.tools.StorageTool", "format", "-t", cluster_id, "-c", str(config)],
        capture_output=True,
        text=True,
    )
    if proc.returncode != 0:
        raise StackError(f"formatting Kafka storage in {data_dir} failed:\n{proc.stdout}{proc.stderr}")


def _cluster_id() -> str:
    import base64

    while True:  # like Kafka's Uuid.randomUuid: an id starting with '-' would parse as an option
        cluster_id = base64.urlsafe_b64encode(uuid.uuid4().bytes).decode().rstrip("=")
        if not cluster_id.startswith("-"):
            return cluster_id


def broker(state_dir: Path, port: int, controller_port: int) -> Server:
    """The broker as a Server. Formats its KRaft storage on first use."""
    java = java_for("Kafka", minimum=17)
    state_dir.mkdir(parents=True, exist_ok=True)
    data_dir = state_dir / "data"
    config = state_dir / "server.properties"
    config.write_text(_properties(port, controller_port, data_dir))
    log4j = state_dir / "log4j2.properties"
    log4j.write_text(_LOG4J2)
    classpath = f"{KAFKA_LIBS}/*"
    command = [
        java,
        *KAFKA_HEAP.split(),
        "-XX:+UseG1GC",
        f"-Dlog4j2.configurationFile={log4j}",
        "-cp",
        classpath,
        "kafka.Kafka",
        str(config),
    ]
    server = Server(
        name="kafka",
        command=command,
        ports={"KAFKA_PORT": port, "KAFKA_CONTROLLER_PORT": controller_port},
        state_dir=state_dir,
        healthy=lambda: _healthy(port),
    )
    if server.pid() is None:
        _format_storage(config, data_dir, classpath, java)
    return server
