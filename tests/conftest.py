"""Shared fixtures: the real local stack, started once for the session (or reused), and fresh topics."""

from __future__ import annotations

import contextlib
import os
import sys
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from typing import TYPE_CHECKING

import pytest

from ingest.core.settings.endpoints import Endpoints

if TYPE_CHECKING:
    from gamelake_dev.localstack.object_store import LocalS3

if os.environ.get("GAMELAKE_HIDE_RUST_RENDERER"):
    # As where `make setup` found no cargo: importing the Rust renderer's extension fails.
    sys.modules["gamelake_protojson"] = None  # type: ignore[assignment]


@dataclass(frozen=True)
class Stack:
    bootstrap_servers: str
    registry_url: str

    def endpoints(self, topic: str) -> Endpoints:
        return Endpoints(self.bootstrap_servers, self.registry_url, topic)


@pytest.fixture(scope="session")
def stack() -> Iterator[Stack]:
    """The local stack. Reuses a healthy one; otherwise starts it and stops it again at the end.

    With KAFKA_BOOTSTRAP_SERVERS and SCHEMA_REGISTRY_URL set, the tests use those servers as they are.
    """
    if "KAFKA_BOOTSTRAP_SERVERS" in os.environ and "SCHEMA_REGISTRY_URL" in os.environ:
        yield Stack(os.environ["KAFKA_BOOTSTRAP_SERVERS"], os.environ["SCHEMA_REGISTRY_URL"])
        return
    from gamelake_dev.localstack import process
    from gamelake_dev.localstack.stack import StackPorts, servers

    ports = StackPorts.from_env()
    started = [server for server in servers(ports) if process.start(server)]
    try:
        yield Stack(ports.bootstrap_servers, ports.registry_url)
    finally:
        for server in reversed(started):
            process.stop(server)


@pytest.fixture(scope="session")
def local_s3(stack: Stack) -> Iterator[LocalS3]:
    """The local S3 server (S3Proxy), with the stack or started for the session on its own."""
    from gamelake_dev.localstack import process
    from gamelake_dev.localstack.object_store import s3_server
    from gamelake_dev.localstack.stack import S3_DIR, StackPorts

    ports = StackPorts.from_env()
    server = s3_server(S3_DIR, ports.s3)
    started = process.start(server)
    try:
        yield ports.object_store
    finally:
        if started:
            process.stop(server)


@pytest.fixture
def fresh_topic(stack: Stack) -> Iterator[str]:
    """A topic name no other test uses. The topic is deleted afterwards."""
    from confluent_kafka.admin import AdminClient

    topic = f"test-{uuid.uuid4().hex[:12]}"
    yield topic
    admin = AdminClient({"bootstrap.servers": stack.bootstrap_servers})
    for future in admin.delete_topics([topic], operation_timeout=10).values():
        with contextlib.suppress(Exception):  # never created, or already gone
            future.result(timeout=15)
