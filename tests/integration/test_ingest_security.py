"""The SASL_SSL path end to end against the local broker's real SCRAM-over-TLS listener.

The stack generates its CA and the broker certificate at start-up (gamelake_dev.localstack.tls)
and listens for SASL_SSL on KAFKA_SASL_SSL_PORT. These tests create a SCRAM user with a
distinctive password, produce and ingest through that listener, show that a wrong password and
an untrusted CA each end the start in one line with exit code 2, and search every output for
the password.
"""

from __future__ import annotations

import json
import subprocess
import sys
import time
from pathlib import Path

import pytest
import requests
from gamelake_dev.demo_schemas import load_version
from gamelake_dev.localstack.stack import StackPorts, ca_certificate
from gamelake_dev.localstack.tls import ensure_broker_tls
from gamelake_dev.producer.publish import ensure_topic

from ingest.core.settings.paths import PROJECT_DIR
from tests.integration.ingest_support import assert_exactly_once, bronze, registry_client, service_env, table
from tests.integration.secure_stack import (
    PASSWORD,
    REGISTRY_PASSWORD,
    REGISTRY_USER,
    USER,
    WRONG_PASSWORD,
    produce_secure,
)

pytestmark = pytest.mark.integration


def _secure(stack, topic: str, warehouse: Path, password: str = PASSWORD, **settings: object) -> dict:
    env = service_env(stack, topic, warehouse, **settings)
    env.update(
        {
            "GAMELAKE_INGEST_BOOTSTRAP_SERVERS": StackPorts.from_env().sasl_ssl_bootstrap_servers,
            "GAMELAKE_INGEST_SECURITY_PROTOCOL": "SASL_SSL",  # upper case, as Kafka's docs write it
            "GAMELAKE_INGEST_SASL_MECHANISM": "SCRAM-SHA-512",
            "GAMELAKE_INGEST_SASL_USERNAME": USER,
            "GAMELAKE_INGEST_SASL_PASSWORD": password,
            "GAMELAKE_INGEST_SSL_CA_LOCATION": str(ca_certificate()),
        }
    )
    return env


def _ingest(env: dict, *args: str, timeout: float = 120) -> subprocess.CompletedProcess[str]:
    command = [sys.executable, "-m", "ingest.cli", *args]
    return subprocess.run(command, env=env, cwd=PROJECT_DIR, capture_output=True, text=True, timeout=timeout)


def test_events_produced_and_ingested_over_sasl_ssl_land_exactly_once(
    stack, scram_user, fresh_topic, tmp_path
):
    ensure_topic(stack.endpoints(fresh_topic), partitions=2)
    ids = produce_secure(stack, fresh_topic, 200)

    result = _ingest(
        _secure(stack, fresh_topic, tmp_path, unknown_schema_retries=0), "run", "--until-caught-up"
    )

    assert result.returncode == 0, result.stderr[-3000:]
    assert sorted(bronze(tmp_path).column("event_id").to_pylist()) == sorted(ids)
    assert table(tmp_path, "dead_letters").num_rows == 1
    assert_exactly_once(tmp_path, stack.bootstrap_servers, fresh_topic)


@pytest.mark.parametrize(
    ("case", "named"),
    [("wrong password", "sasl_password"), ("untrusted certificate", "ssl_ca_location")],
)
def test_a_refused_login_or_certificate_is_one_line_naming_the_setting(
    stack, scram_user, fresh_topic, tmp_path, case, named
):
    ensure_topic(stack.endpoints(fresh_topic), partitions=1)
    env = _secure(
        stack, fresh_topic, tmp_path, password=WRONG_PASSWORD if case == "wrong password" else PASSWORD
    )
    if case == "untrusted certificate":  # a CA of its own, which never signed the broker's certificate
        env["GAMELAKE_INGEST_SSL_CA_LOCATION"] = str(
            ensure_broker_tls(tmp_path / "other-ca", "127.0.0.1").ca_certificate
        )

    started = time.monotonic()
    result = _ingest(env, "run", "--until-caught-up", timeout=60)

    took = time.monotonic() - started
    lines = [line for line in (result.stdout + result.stderr).splitlines() if line.strip()]
    assert result.returncode == 2, result.stderr
    assert len(lines) <= 3 and took < 10, (took, lines)
    assert named in lines[-1] and "Traceback" not in result.stderr
    assert WRONG_PASSWORD not in result.stderr + result.stdout


def test_the_password_never_leaves_in_logs_status_errors_or_tables(stack, scram_user, fresh_topic, tmp_path):
    ensure_topic(stack.endpoints(fresh_topic), partitions=1)
    produce_secure(stack, fresh_topic, 20)
    # DEBUG logs, librdkafka's own debug output on security and config, a passthrough secret too.
    env = _secure(stack, fresh_topic, tmp_path, unknown_schema_retries=0, log_level="debug")
    env["GAMELAKE_INGEST_KAFKA"] = json.dumps({"debug": "security,broker,conf", "ssl.key.password": PASSWORD})
    outputs = {
        "run": _ingest(env, "run", "--until-caught-up"),
        "status --json": _ingest(env, "status", "--json"),
        "dlq list": _ingest(env, "dlq", "list"),
    }
    for name, result in outputs.items():
        # status warns (exit 1): silver and gold are not built in this warehouse
        expected = {"status --json": 1}.get(name, 0)
        assert result.returncode == expected, f"ingest {name}: {result.stderr[-3000:]}"
    assert "sasl" in outputs["run"].stderr.lower(), "librdkafka's debug log was not captured"
    wrong = _ingest(
        _secure(stack, fresh_topic, tmp_path / "w", password=WRONG_PASSWORD), "run", "--until-caught-up"
    )
    assert wrong.returncode == 2
    for name, result in outputs.items():
        text = result.stdout + result.stderr
        assert PASSWORD not in text, f"the password appeared in the output of `ingest {name}`"
    assert WRONG_PASSWORD not in wrong.stdout + wrong.stderr
    for name in ("ingest_event_log", "dead_letters", "game_events"):
        assert PASSWORD not in str(table(tmp_path, name).to_pylist()), f"the password is in {name}"


def test_a_setting_named_twice_is_refused_before_anything_connects(stack, fresh_topic, tmp_path):
    env = service_env(stack, fresh_topic, tmp_path, security_protocol="plaintext")
    env["GAMELAKE_INGEST_KAFKA"] = json.dumps(
        {"security.protocol": "SASL_PLAINTEXT", "sasl.password": PASSWORD}
    )
    result = _ingest(env, "run", "--until-caught-up")
    assert result.returncode == 2
    assert "'security.protocol' is set twice" in result.stderr and "security_protocol" in result.stderr
    assert PASSWORD not in result.stderr + result.stdout


def test_registry_basic_auth_lands_with_the_right_password_and_is_one_line_with_a_wrong_one(
    stack, authed_registry, fresh_topic, tmp_path
):
    from confluent_kafka.schema_registry.protobuf import ProtobufSerializer
    from confluent_kafka.serialization import MessageField, SerializationContext
    from gamelake_dev.producer.publish import SERIALIZER_CONF

    from tests.integration.ingest_support import produce_raw

    assert requests.get(f"{authed_registry}/subjects", timeout=10).status_code == 401
    ensure_topic(stack.endpoints(fresh_topic), partitions=1)
    client = registry_client(
        authed_registry, **{"basic.auth.user.info": f"{REGISTRY_USER}:{REGISTRY_PASSWORD}"}
    )
    v2 = load_version(2).message_class
    serialize = ProtobufSerializer(v2, client, SERIALIZER_CONF)
    ctx = SerializationContext(fresh_topic, MessageField.VALUE)
    sent = [serialize(v2(event_id=f"r-{i}", game_name="puzzle_pop"), ctx) for i in range(30)]
    produce_raw(stack.bootstrap_servers, fresh_topic, [(b"k", value) for value in sent])

    env = service_env(
        stack, fresh_topic, tmp_path, registry_url=authed_registry, registry_username=REGISTRY_USER
    )
    good = _ingest(
        {**env, "GAMELAKE_INGEST_REGISTRY_PASSWORD": REGISTRY_PASSWORD}, "run", "--until-caught-up"
    )
    started = time.monotonic()
    bad = _ingest({**env, "GAMELAKE_INGEST_REGISTRY_PASSWORD": WRONG_PASSWORD}, "run", "--until-caught-up")
    took = time.monotonic() - started

    assert good.returncode == 0, good.stderr[-3000:]
    assert sorted(bronze(tmp_path).column("event_id").to_pylist()) == sorted(f"r-{i}" for i in range(30))
    lines = [line for line in (bad.stdout + bad.stderr).splitlines() if line.strip()]
    assert bad.returncode == 2 and len(lines) <= 3 and took < 10, (took, lines)
    assert "registry_username/registry_password" in lines[-1]
    for result in (good, bad):
        assert REGISTRY_PASSWORD not in result.stdout + result.stderr
        assert WRONG_PASSWORD not in result.stdout + result.stderr
    assert REGISTRY_PASSWORD not in str(table(tmp_path, "ingest_event_log").to_pylist())
