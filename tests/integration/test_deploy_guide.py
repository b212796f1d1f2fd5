"""doc/DEPLOY.md against the real parts: its settings file and systemd units, run on the local
stack with the example hosts replaced by the stack's (SASL_SSL, a registry with basic auth, S3)."""

from __future__ import annotations

import json
import os
import re
import shlex
import shutil
import signal
import socket
import subprocess
import uuid
from pathlib import Path

import pytest
from confluent_kafka.schema_registry.protobuf import ProtobufSerializer
from gamelake_dev.demo_schemas import load_version
from gamelake_dev.localstack.stack import StackPorts, ca_certificate
from gamelake_dev.producer.publish import SERIALIZER_CONF, ensure_topic

from ingest.cli import build_parser
from ingest.core.settings.paths import PROJECT_DIR
from ingest.landing.delta.table_scan import scan
from tests.integration.ingest_support import (
    assert_exactly_once_on_s3,
    landed_on_s3,
    registry_client,
    s3_table,
    wait_until,
)
from tests.integration.secure_stack import PASSWORD, REGISTRY_PASSWORD, REGISTRY_USER, USER, produce_secure

pytestmark = pytest.mark.integration

GUIDE = PROJECT_DIR / "doc" / "DEPLOY.md"
SETTINGS = PROJECT_DIR / "ops" / "deploy" / "ingest.toml"
UNITS = PROJECT_DIR / "ops" / "systemd"
INSTALLED = "/opt/gamelake"
INSTANCES = ("1", "2")
EVENTS = 400


def _blocks(language: str) -> list[str]:
    return re.findall(rf"```{language}\n(.*?)```", GUIDE.read_text(), flags=re.DOTALL)


def _service_section(unit: str, instance: str) -> dict[str, list[str]]:
    """The [Service] settings of ``unit`` for ``instance``, installed in this checkout."""
    text = (UNITS / unit).read_text().replace("%i", instance).replace(INSTALLED, str(PROJECT_DIR))
    section = text.split("[Service]", 1)[1].split("\n[", 1)[0]
    settings: dict[str, list[str]] = {}
    for line in section.splitlines():
        if line and not line.startswith("#"):
            key, _, value = line.partition("=")
            settings.setdefault(key, []).append(value)
    return settings


def test_the_guides_settings_file_is_the_one_in_ops():
    assert _blocks("toml") == [SETTINGS.read_text()]


def test_every_ingest_command_of_the_guide_and_the_units_parses_with_the_cli():
    text = GUIDE.read_text()
    commands = [line for block in _blocks("sh") for line in block.splitlines() if line.startswith("ingest ")]
    commands += re.findall(r"`(ingest [^`]+)`", text)
    for unit in ("gamelake-ingest@.service", "gamelake-refresh.service"):
        exec_start = _service_section(unit, "1")["ExecStart"][0]
        commands.append(exec_start.replace(f"{PROJECT_DIR}/.venv/bin/", ""))
    assert len(commands) >= 8, commands
    parser = build_parser()
    for command in commands:
        try:
            parser.parse_args(shlex.split(command)[1:])
        except SystemExit:
            pytest.fail(f"doc/DEPLOY.md or ops/systemd: {command!r} is not a valid ingest command")


def test_systemd_verifies_every_unit_installed_in_this_checkout(tmp_path):
    analyze = shutil.which("systemd-analyze")
    assert analyze, "systemd-analyze is missing: .ci/run installs Debian's systemd package"
    for unit in UNITS.iterdir():
        installed = tmp_path / unit.name.replace("@.", "@1.")
        installed.write_text(unit.read_text().replace(INSTALLED, str(PROJECT_DIR)))
        done = subprocess.run([analyze, "verify", str(installed)], capture_output=True, text=True, timeout=60)
        assert (done.returncode, done.stderr.strip()) == (0, ""), (unit.name, done.stderr)


def _deployed_settings(tmp_path: Path, topic: str, registry_url: str, warehouse_uri: str) -> Path:
    """ops/deploy/ingest.toml with the example hosts replaced by the local stack's."""
    text = SETTINGS.read_text()
    replacements = {
        '"kafka-1.example.internal:9094,kafka-2.example.internal:9094,kafka-3.example.internal:9094"': (
            f'"{StackPorts.from_env().sasl_ssl_bootstrap_servers}"'
        ),
        '"/etc/gamelake/kafka-ca.pem"': f'"{ca_certificate()}"',
        'topics = ["game-events"]': f'topics = ["{topic}"]',
        'group_id = "gamelake-ingest"': f'group_id = "group-{topic}"',
        'sasl_username = "gamelake-ingest"': f'sasl_username = "{USER}"',
        'registry_username = "gamelake-ingest"': f'registry_username = "{REGISTRY_USER}"',
        '"https://registry.example.internal/apis/ccompat/v7"': f'"{registry_url}"',
        '"s3://studio-lake/gamelake"': f'"{warehouse_uri}"',
    }
    for example, local in replacements.items():
        assert example in text, f"ops/deploy/ingest.toml no longer holds {example}: update this test"
        text = text.replace(example, local)
    path = tmp_path / "ingest.toml"
    path.write_text(text)
    return path


def _service_env(local_s3, tmp_path: Path, unit: dict[str, list[str]]) -> dict[str, str]:
    """What systemd hands the service: ingest.env's secrets and the unit's Environment= lines."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("GAMELAKE_INGEST_", "AWS_"))}
    env |= {
        "GAMELAKE_INGEST_SASL_PASSWORD": PASSWORD,
        "GAMELAKE_INGEST_REGISTRY_PASSWORD": REGISTRY_PASSWORD,
        **local_s3.client_environment(),
        # this checkout's own tables stay out of the status report
        "GAMELAKE_INGEST_WAREHOUSE_DIR": str(tmp_path / "local"),
        "GAMELAKE_INGEST_DBT_WAREHOUSE_DIR": str(tmp_path / "local"),
    }
    for line in unit.get("Environment", []):
        name, _, value = line.partition("=")
        env[name] = value
    return env


def _free(port: int) -> bool:
    with socket.socket() as sock:
        return sock.connect_ex(("127.0.0.1", port)) != 0


def test_two_instances_from_the_units_land_on_s3_over_sasl_ssl_with_registry_auth(
    stack, scram_user, authed_registry, local_s3, fresh_topic, tmp_path, monkeypatch
):
    ensure_topic(stack.endpoints(fresh_topic), partitions=2)
    login = {"basic.auth.user.info": f"{REGISTRY_USER}:{REGISTRY_PASSWORD}"}
    client = registry_client(authed_registry, **login)
    serializer = ProtobufSerializer(load_version(2).message_class, client, SERIALIZER_CONF)
    ids = produce_secure(stack, fresh_topic, EVENTS, serializer=serializer)
    warehouse_uri = f"s3://{local_s3.bucket}/deploy-{uuid.uuid4().hex[:10]}"
    settings = _deployed_settings(tmp_path, fresh_topic, authed_registry, warehouse_uri)

    instances = []
    for instance in INSTANCES:
        unit = _service_section("gamelake-ingest@.service", instance)
        env = _service_env(local_s3, tmp_path, unit)
        assert _free(int(env["GAMELAKE_INGEST_METRICS_PORT"])), "the unit's metrics port is taken here"
        command = shlex.split(unit["ExecStart"][0].replace("/etc/gamelake/ingest.toml", str(settings)))
        log = open(tmp_path / f"ingest-{instance}.log", "wb")  # noqa: SIM115 - closed with the process
        process = subprocess.Popen(command, env=env, cwd=unit["WorkingDirectory"][0], stdout=log, stderr=log)
        instances.append((instance, unit, env, process))
    try:
        for name, value in local_s3.client_environment().items():  # this test's own reads of S3
            monkeypatch.setenv(name, value)
        wait_until(lambda: len(landed_on_s3(warehouse_uri)) == EVENTS + 1, 180, "every record landed on S3")
        for instance, *_ in instances:
            health = _service_section("gamelake-ingest-health@.service", instance)["ExecStart"][0]
            done = subprocess.run(shlex.split(health), capture_output=True, text=True, timeout=30)
            assert done.returncode == 0, (instance, done.stderr)
    finally:
        for _, unit, _, process in instances:
            process.send_signal(getattr(signal, unit["KillSignal"][0]))
        codes = [process.wait(timeout=120) for *_, process in instances]
    logs = {i: (tmp_path / f"ingest-{i}.log").read_text() for i in INSTANCES}
    assert codes == [0, 0], logs
    assert_exactly_once_on_s3(warehouse_uri, stack.bootstrap_servers, fresh_topic)
    for text in logs.values():
        assert PASSWORD not in text and REGISTRY_PASSWORD not in text

    # The guide's checks with the same file and secrets.
    env = instances[0][2]
    status = _ingest(env, "status", "--config", str(settings), "--json")
    report = json.loads(status.stdout)
    assert (report["tables"]["bronze"]["rows"], report["kafka"]["lag"]) == (EVENTS, 0), status.stderr
    # Warnings only, as the guide says: silver and gold are not built yet, and the dead letter.
    assert status.returncode == 1
    assert {a["code"] for a in report["anomalies"]} == {"table_missing", "dead_letters"}
    listed = _ingest(env, "dlq", "list", "--config", str(settings))
    assert listed.returncode == 0 and "1 dead letter" in listed.stdout, listed.stderr
    landed = scan(s3_table(warehouse_uri, "game_events"), ["event_id"])["event_id"].to_pylist()
    assert sorted(landed) == sorted(ids)


def _ingest(env: dict[str, str], *args: str) -> subprocess.CompletedProcess[str]:
    command = [str(PROJECT_DIR / ".venv" / "bin" / "ingest"), *args]
    return subprocess.run(command, env=env, cwd=PROJECT_DIR, capture_output=True, text=True, timeout=120)
