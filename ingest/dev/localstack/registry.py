"""Apicurio Registry 3.x: a real schema registry with a Confluent-compatible REST API.

It stores schemas in an H2 database file under .stack/, so ids survive a restart of
the registry, which the ingest's restart tests rely on.
"""

from __future__ import annotations

from pathlib import Path

import requests

from ingest.dev.localstack.artifacts import APICURIO_HOME
from ingest.dev.localstack.java import java_for
from ingest.dev.localstack.process import Server

REGISTRY_HEAP = "-Xms128m -Xmx384m"
CCOMPAT_PATH = "/apis/ccompat/v7"


def confluent_url(port: int) -> str:
    return f"http://localhost:{port}{CCOMPAT_PATH}"


def _healthy(port: int) -> bool:
    try:
        return requests.get(f"http://127.0.0.1:{port}{CCOMPAT_PATH}/subjects", timeout=2).ok
    except requests.RequestException:
        return False


def registry(state_dir: Path, port: int, management_port: int) -> Server:
    """Apicurio on ``port``. Quarkus also opens a management port (health, metrics); it cannot be
    turned off at run time, so it gets a loopback port of its own."""
    java = java_for("Apicurio Registry", minimum=21, env_var="REGISTRY_JAVA_HOME")
    database = state_dir / "db" / "registry"
    settings = {
        "quarkus.http.host": "127.0.0.1",
        "quarkus.http.port": str(port),
        "quarkus.log.console.json": "false",
        "quarkus.management.host": "127.0.0.1",
        "quarkus.management.port": str(management_port),
        "apicurio.datasource.url": f"jdbc:h2:file:{database}",
        "apicurio.datasource.jdbc.initial-size": "2",
        "apicurio.datasource.jdbc.min-size": "2",
        "apicurio.datasource.jdbc.max-size": "10",
        "apicurio.storage.snapshot.location": str(state_dir),
    }
    command = [
        java,
        *REGISTRY_HEAP.split(),
        "-XX:+UseSerialGC",
        *(f"-D{key}={value}" for key, value in settings.items()),
        "-jar",
        str(APICURIO_HOME / "quarkus-run.jar"),
    ]
    return Server(
        name="schema-registry",
        command=command,
        ports={"SCHEMA_REGISTRY_PORT": port, "SCHEMA_REGISTRY_MANAGEMENT_PORT": management_port},
        state_dir=state_dir,
        healthy=lambda: _healthy(port),
    )
