"""The local stack as one unit: up, down, status. Ports come from the environment."""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

from gamelake_dev.localstack import process
from gamelake_dev.localstack.apicurio import confluent_url, registry
from gamelake_dev.localstack.kafka import broker
from gamelake_dev.localstack.metastore import LocalMetastore, metastore_server
from gamelake_dev.localstack.object_store import LocalS3, local_s3, s3_server
from ingest.core.errors import ConfigError
from ingest.core.settings.paths import STACK_DIR

S3_DIR = STACK_DIR / "s3"
METASTORE_DIR = STACK_DIR / "metastore"

PORT_VARIABLES = {
    "KAFKA_PORT": 9092,
    "KAFKA_CONTROLLER_PORT": 9093,
    "KAFKA_SASL_SSL_PORT": 9094,
    "SCHEMA_REGISTRY_PORT": 8081,
    "SCHEMA_REGISTRY_MANAGEMENT_PORT": 9081,
    "S3_PORT": 9190,
    "METASTORE_PORT": 9197,
}


@dataclass(frozen=True)
class StackPorts:
    kafka: int
    kafka_controller: int
    kafka_sasl_ssl: int
    registry: int
    registry_management: int
    s3: int
    metastore: int

    @classmethod
    def from_env(cls) -> StackPorts:
        values = [_port(name, default) for name, default in PORT_VARIABLES.items()]
        if len(set(values)) != len(values):
            raise ConfigError(
                f"the stack's ports must differ, got {dict(zip(PORT_VARIABLES, values, strict=True))}"
            )
        return cls(*values)

    @property
    def bootstrap_servers(self) -> str:
        return f"localhost:{self.kafka}"

    @property
    def sasl_ssl_bootstrap_servers(self) -> str:
        """The SASL_SSL listener: SCRAM-SHA-512 over TLS, trusting ca_certificate()."""
        return f"localhost:{self.kafka_sasl_ssl}"

    @property
    def registry_url(self) -> str:
        return confluent_url(self.registry)

    @property
    def object_store(self) -> LocalS3:
        return local_s3(S3_DIR, self.s3)

    @property
    def shared_metastore(self) -> LocalMetastore:
        return LocalMetastore(self.metastore, METASTORE_DIR)


def metastore_up(ports: StackPorts) -> LocalMetastore:
    """The shared metastore (PostgreSQL): not part of ``up``, which needs no PostgreSQL. Started by
    the S3 pipeline and the tests; ``down`` stops it with the rest."""
    started = process.start(metastore_server(METASTORE_DIR, ports.metastore))
    print(f"metastore: {'started' if started else 'already running'} on {ports.shared_metastore.url}")
    return ports.shared_metastore


def _port(name: str, default: int) -> int:
    raw = os.environ.get(name, str(default))
    if not raw.isdigit() or not 1024 <= int(raw) <= 65535:
        raise ConfigError(f"{name}={raw!r} is not a port: use a number from 1024 to 65535")
    return int(raw)


def servers(ports: StackPorts) -> list[process.Server]:
    return [
        broker(STACK_DIR / "kafka", ports.kafka, ports.kafka_controller, ports.kafka_sasl_ssl),
        registry(STACK_DIR / "schema-registry", ports.registry, ports.registry_management),
        s3_server(S3_DIR, ports.s3),
    ]


def ca_certificate() -> Path:
    """The CA that signed the SASL_SSL listener's certificate (clients' ssl.ca.location)."""
    return STACK_DIR / "kafka" / "tls" / "ca.pem"


def up(ports: StackPorts) -> None:
    for server in servers(ports):
        started = process.start(server)
        print(f"{server.name}: {'started' if started else 'already running'}; log {server.log_file}")
    describe(ports)


def down(ports: StackPorts) -> None:
    optional = [metastore_server(METASTORE_DIR, ports.metastore)] if METASTORE_DIR.is_dir() else []
    for server in reversed(servers(ports) + optional):
        stopped = process.stop(server)
        print(f"{server.name}: {'stopped' if stopped else 'not running'}")


def describe(ports: StackPorts) -> bool:
    """Print where each server listens and its logs. Returns True when all are healthy."""
    all_ok = True
    s3 = ports.object_store
    endpoints = {
        "kafka": ports.bootstrap_servers,
        "schema-registry": ports.registry_url,
        "s3": f"{s3.endpoint_url} bucket {s3.bucket}",
    }
    for server in servers(ports):
        pid = server.pid()
        ok = pid is not None and server.healthy()
        all_ok &= ok
        state = f"healthy (pid {pid})" if ok else ("running, not healthy" if pid else "stopped")
        print(f"  {server.name:16} {endpoints[server.name]:45} {state:22} log {server.log_file}")
    print(
        f"  kafka SASL_SSL   {ports.sasl_ssl_bootstrap_servers} (SCRAM-SHA-512; CA {ca_certificate()}; "
        "users: ingest stack add-user NAME)"
    )
    print(f"  export KAFKA_BOOTSTRAP_SERVERS={ports.bootstrap_servers}")
    print(f"  export SCHEMA_REGISTRY_URL={ports.registry_url}")
    for name, value in s3.client_environment().items():
        print(f"  export {name}={value}")
    return all_ok
