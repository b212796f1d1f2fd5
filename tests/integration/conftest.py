"""Fixtures of the integration tests that run the stack as a deployment does (secure_stack.py), and
a fresh prefix on the local S3 server."""

from __future__ import annotations

import os
import uuid
from collections.abc import Iterator

import pytest
from gamelake_dev.localstack.kafka_users import add_scram_user

from tests.integration.secure_stack import PASSWORD, REGISTRY_PASSWORD, REGISTRY_USER, USER


@pytest.fixture(scope="module")
def scram_user(stack) -> str:
    add_scram_user(stack.bootstrap_servers, USER, PASSWORD)
    return USER


@pytest.fixture(scope="session")  # one server for every module that needs it: a start costs ~20 s
def authed_registry(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """A second Apicurio Registry that answers only requests with HTTP basic auth."""
    from gamelake_dev.localstack import process
    from gamelake_dev.localstack.apicurio import confluent_url, registry

    state = tmp_path_factory.mktemp("authed-registry")
    server = registry(state, 8095, 9095, users={REGISTRY_USER: REGISTRY_PASSWORD})
    process.start(server)
    try:
        yield confluent_url(8095)
    finally:
        process.stop(server)


@pytest.fixture
def on_s3(local_s3, monkeypatch):
    """This process's AWS variables point at the local server (none others), as an operator's would."""
    for name in [name for name in os.environ if name.startswith("AWS_")]:
        monkeypatch.delenv(name)
    for name, value in local_s3.client_environment().items():
        monkeypatch.setenv(name, value)
    return f"s3://{local_s3.bucket}/test-{uuid.uuid4().hex[:10]}"
