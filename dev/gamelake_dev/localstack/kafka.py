"""A single-node Apache Kafka broker in KRaft mode, from Kafka's own jars."""

from __future__ import annotations

import logging
import subprocess
import uuid
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from confluent_kafka.admin import AdminClient

from gamelake_dev.localstack.artifacts import KAFKA_LIBS
from gamelake_dev.localstack.bind import bind_host
from gamelake_dev.localstack.java import java_for
from gamelake_dev.localstack.process import Server
from gamelake_dev.localstack.tls import BrokerTls, ensure_broker_tls
from ingest.core.errors import StackError

KAFKA_HEAP = "-Xms256m -Xmx512m"


SCRAM_MECHANISM = "SCRAM-SHA-512"


def _properties(host: str, port: int, controller_port: int, data_dir: Path, secure: _Secure | None) -> str:
    listeners = [f"PLAINTEXT://{host}:{port}", f"CONTROLLER://{host}:{controller_port}"]
    advertised = [f"PLAINTEXT://{host}:{port}"]
    protocols = ["CONTROLLER:PLAINTEXT", "PLAINTEXT:PLAINTEXT"]
    if secure is not None:
        listeners.append(f"SASL_SSL://{host}:{secure.port}")
        advertised.append(f"SASL_SSL://{host}:{secure.port}")
        protocols.append("SASL_SSL:SASL_SSL")
    return f"""\
process.roles=broker,controller
node.id=1
controller.quorum.voters=1@{host}:{controller_port}
listeners={",".join(listeners)}
advertised.listeners={",".join(advertised)}
controller.listener.names=CONTROLLER
inter.broker.listener.name=PLAINTEXT
listener.security.protocol.map={",".join(protocols)}
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
""" + (secure.properties() if secure is not None else "")


@dataclass(frozen=True)
class _Secure:
    """The SASL_SSL listener: SCRAM-SHA-512 over TLS with the stack's own CA."""

    port: int
    tls: BrokerTls

    def properties(self) -> str:
        prefix = "listener.name.sasl_ssl"
        return f"""\
sasl.enabled.mechanisms={SCRAM_MECHANISM}
{prefix}.scram-sha-512.sasl.jaas.config=org.apache.kafka.common.security.scram.ScramLoginModule required;
{prefix}.ssl.keystore.type=PEM
{prefix}.ssl.keystore.location={self.tls.broker_pem}
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


def _healthy(host: str, port: int) -> bool:
    conf: dict[str, Any] = {"bootstrap.servers": f"{host}:{port}", "log_level": 0, "logger": _QUIET}
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


def broker(state_dir: Path, port: int, controller_port: int, sasl_ssl_port: int | None = None) -> Server:
    """The broker as a Server, with a SASL_SSL listener when ``sasl_ssl_port`` is given.

    Formats its KRaft storage on first use.
    """
    java = java_for("Kafka", minimum=17)
    host = bind_host()
    state_dir.mkdir(parents=True, exist_ok=True)
    data_dir = state_dir / "data"
    secure = None
    if sasl_ssl_port is not None:
        secure = _Secure(sasl_ssl_port, ensure_broker_tls(state_dir / "tls", host))
    config = state_dir / "server.properties"
    config.write_text(_properties(host, port, controller_port, data_dir, secure))
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
        ports={"KAFKA_PORT": port, "KAFKA_CONTROLLER_PORT": controller_port}
        | ({"KAFKA_SASL_SSL_PORT": sasl_ssl_port} if sasl_ssl_port is not None else {}),
        state_dir=state_dir,
        healthy=lambda: _healthy(host, port),
    )
    if server.pid() is None:
        _format_storage(config, data_dir, classpath, java)
    return server
