"""Bad or odd configuration gets a one-line error and exit code 2, never a traceback or a secret."""

from __future__ import annotations

import subprocess
import sys
import time

import pytest

from ingest.core.settings.paths import PROJECT_DIR
from tests.integration.ingest_support import service_env

pytestmark = pytest.mark.integration
# The CLI gives Kafka 8 s; without its own timeout it would wait for ever (the run's 60 s limit).
# The rest is the interpreter and imports starting, 2 s on a loaded 2-core machine, so the bound
# tells "gave up at its own timeout" from "hung" without timing the machine.
GAVE_UP_WITHIN_S = 8 + 12


def _run(env: dict[str, str], *command: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "ingest.cli", *(command or ("run", "--until-caught-up"))],
        env={**env, "GAMELAKE_INGEST_SASL_PASSWORD": "s3cret-pw"},
        cwd=PROJECT_DIR,
        capture_output=True,
        text=True,
        timeout=60,
    )


@pytest.mark.parametrize(
    ("override", "message"),
    [
        ({"GAMELAKE_INGEST_BOOTSTRAP_SERVERS": "localhost:1"}, "did not answer within 8 s"),
        ({"GAMELAKE_INGEST_REGISTRY_URL": "http://localhost:8081/not-a-registry"}, "does not answer like a"),
        ({"GAMELAKE_INGEST_REGISTRY_URL": "http://localhost:1"}, "is not reachable"),
        ({"GAMELAKE_INGEST_WAREHOUSE_DIR": "/proc/gamelake"}, "cannot use /proc/gamelake"),
        ({"GAMELAKE_INGEST_FLUSH_ROWS": "-5"}, "GAMELAKE_INGEST_FLUSH_ROWS='-5'"),
        ({"GAMELAKE_INGEST_TOPICS": '["no-such-topic-xyz"]'}, "do not exist"),
        ({"GAMELAKE_INGEST_KAFKA": '{"group.id": "sneaky"}'}, "set by the service itself"),
    ],
)
def test_bad_configuration_is_a_clear_error(stack, fresh_topic, tmp_path, override, message):
    from gamelake_dev.producer.publish import ensure_topic

    ensure_topic(stack.endpoints(fresh_topic), 1)
    started = time.monotonic()
    result = _run({**service_env(stack, fresh_topic, tmp_path), **override})
    took = time.monotonic() - started
    assert result.returncode == 2
    assert message in result.stderr and "Traceback" not in result.stderr
    assert "s3cret-pw" not in result.stderr + result.stdout
    assert len(result.stderr.splitlines()) <= 3 and took < GAVE_UP_WITHIN_S, (took, result.stderr[-2000:])


def test_status_with_kafka_unreachable_is_one_line_at_its_timeout(stack, fresh_topic, tmp_path):
    env = {**service_env(stack, fresh_topic, tmp_path), "GAMELAKE_INGEST_BOOTSTRAP_SERVERS": "localhost:1"}
    started = time.monotonic()
    result = _run(env, "status")
    took = time.monotonic() - started
    assert result.returncode == 2 and took < GAVE_UP_WITHIN_S, took
    [line] = result.stderr.splitlines()
    assert line.startswith("ingest status: error: Kafka at localhost:1 did not answer within 8 s")
    assert line.endswith("check bootstrap_servers and the security settings")
