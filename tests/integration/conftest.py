"""Fixtures of the integration tests that run the stack as a deployment does (secure_stack.py)."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from gamelake_dev.localstack.kafka_users import add_scram_user

from tests.integration.secure_stack import PASSWORD, REGISTRY_PASSWORD, REGISTRY_USER, USER


@pytest.fixture(scope="module")
def scram_user(stack) -> str:
    add_scram_user(stack.bootstrap_servers, USER, PASSWORD)
    return USER


@pytest.fixture(scope="module")
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
