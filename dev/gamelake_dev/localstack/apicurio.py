"""Apicurio Registry 3.x: a real schema registry with a Confluent-compatible REST API.

It stores schemas in an H2 database file under .stack/, so ids survive a restart of
the registry, which the ingest's restart tests rely on.
"""

from __future__ import annotations

import os
from pathlib import Path

import requests

from gamelake_dev.localstack.artifacts import APICURIO_HOME
from gamelake_dev.localstack.bind import bind_host
from gamelake_dev.localstack.java import java_for
from gamelake_dev.localstack.process import Server

REGISTRY_HEAP = "-Xms128m -Xmx384m"
CCOMPAT_PATH = "/apis/ccompat/v7"


def confluent_url(port: int) -> str:
    return f"http://localhost:{port}{CCOMPAT_PATH}"


def _healthy(port: int, users: dict[str, str] | None = None) -> bool:
    auth = next(iter(users.items())) if users else None
    try:
        return requests.get(f"http://{bind_host()}:{port}{CCOMPAT_PATH}/subjects", auth=auth, timeout=2).ok
    except requests.RequestException:
        return False


def _basic_auth_file(state_dir: Path, users: dict[str, str]) -> Path:
    """Quarkus settings that make every request need one of ``users`` (HTTP basic auth).

    In a file only the owner can read, so no password shows on a command line.
    """
    lines = [
        "quarkus.http.auth.basic=true",
        "quarkus.security.users.embedded.enabled=true",
        "quarkus.security.users.embedded.plain-text=true",
        "quarkus.http.auth.permission.all.paths=/*",
        "quarkus.http.auth.permission.all.policy=authenticated",
    ]
    for user, password in users.items():
        lines += [
            f"quarkus.security.users.embedded.users.{user}={password}",
            f"quarkus.security.users.embedded.roles.{user}=sr-admin",
        ]
    path = state_dir / "basic-auth.properties"
    state_dir.mkdir(parents=True, exist_ok=True)
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "w") as handle:
        handle.write("\n".join(lines) + "\n")
    return path


def registry(state_dir: Path, port: int, management_port: int, users: dict[str, str] | None = None) -> Server:
    """Apicurio on ``port``; with ``users``, every request needs one of them (HTTP basic auth).

    Quarkus also opens a management port (health, metrics); it cannot be turned off at run time,
    so it gets a loopback port of its own."""
    java = java_for("Apicurio Registry", minimum=21, env_var="REGISTRY_JAVA_HOME")
    database = state_dir / "db" / "registry"
    settings = {
        "quarkus.http.host": bind_host(),
        "quarkus.http.port": str(port),
        "quarkus.log.console.json": "false",
        "quarkus.management.host": bind_host(),
        "quarkus.management.port": str(management_port),
        "apicurio.datasource.url": f"jdbc:h2:file:{database}",
        "apicurio.datasource.jdbc.initial-size": "2",
        "apicurio.datasource.jdbc.min-size": "2",
        "apicurio.datasource.jdbc.max-size": "10",
        "apicurio.storage.snapshot.location": str(state_dir),
    }
    if users:
        settings["quarkus.config.locations"] = f"file:{_basic_auth_file(state_dir, users)}"
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
        healthy=lambda: _healthy(port, users),
    )
