"""On a private stack (own ports, own state): broker and registry stop/restart, and DLQ replay after a fix."""

from __future__ import annotations

import base64
import json
import signal
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path

import pytest
from confluent_kafka.schema_registry import Schema, SchemaReference
from deltalake import DeltaTable
from gamelake_dev.demo_schemas import load_version
from gamelake_dev.localstack import process
from gamelake_dev.localstack.apicurio import confluent_url, registry
from gamelake_dev.localstack.kafka import broker
from gamelake_dev.producer.datagen import EventGenerator
from gamelake_dev.producer.publish import ensure_topic, publish

from ingest.core.settings.endpoints import Endpoints
from ingest.core.settings.paths import PROJECT_DIR
from ingest.landing.decode import wire_format as wire
from tests.integration.ingest_support import (
    assert_exactly_once,
    bronze,
    kafka_coordinates,
    landed_coordinates,
    produce_raw,
    registry_client,
    run_service,
    service_env,
    start_service,
    table,
)

pytestmark = [pytest.mark.integration, pytest.mark.slow]
PORTS = {"kafka": 19192, "controller": 19193, "registry": 18181, "management": 18182}
REPLAY_HOLD_S = 6  # how long each of two replays waits between its files and its commit


@dataclass
class PrivateStack:
    state: Path

    @property
    def bootstrap_servers(self) -> str:
        return f"localhost:{PORTS['kafka']}"

    @property
    def registry_url(self) -> str:
        return confluent_url(PORTS["registry"])

    def endpoints(self, topic: str) -> Endpoints:
        return Endpoints(self.bootstrap_servers, self.registry_url, topic)

    def broker(self) -> process.Server:
        return broker(self.state / "kafka", PORTS["kafka"], PORTS["controller"])

    def registry(self) -> process.Server:
        return registry(self.state / "registry", PORTS["registry"], PORTS["management"])


@pytest.fixture(scope="module")
def private_stack(tmp_path_factory):
    stack = PrivateStack(tmp_path_factory.mktemp("private-stack"))
    servers = [stack.broker(), stack.registry()]
    for server in servers:
        process.start(server)
    try:
        yield stack
    finally:
        for server in reversed(servers):
            process.stop(server)


def _wait_rows(warehouse: Path, count: int, proc, timeout: float = 120) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        assert proc.poll() is None, "the service exited"
        if (
            DeltaTable.is_deltatable(str(warehouse / "bronze" / "game_events"))
            and bronze(warehouse).num_rows >= count
        ):
            return
        time.sleep(0.5)
    raise AssertionError(f"bronze did not reach {count} rows")


def _events(seed: int, count: int, versions: list[int]):
    return EventGenerator(["space_raiders"], versions, seed=seed).events(count)


def test_broker_stopped_and_restarted_loses_nothing(private_stack, tmp_path):
    topic = "restart-broker"
    publish(private_stack.endpoints(topic), _events(1, 3000, [1, 2]), [1, 2], partitions=6, progress=False)
    proc = start_service(service_env(private_stack, topic, tmp_path), log=tmp_path / "ingest.log")
    try:
        _wait_rows(tmp_path, 3000, proc)
        process.stop(private_stack.broker())
        time.sleep(4)  # the service keeps running against a dead broker
        assert proc.poll() is None
        process.start(private_stack.broker())
        publish(
            private_stack.endpoints(topic), _events(2, 3000, [2, 3]), [2, 3], partitions=6, progress=False
        )
        _wait_rows(tmp_path, 6000, proc)
        proc.send_signal(signal.SIGTERM)
        assert proc.wait(timeout=60) == 0
    finally:
        if proc.poll() is None:
            proc.kill()
    assert table(tmp_path, "dead_letters").num_rows == 0
    assert_exactly_once(tmp_path, private_stack.bootstrap_servers, topic)


def test_registry_stopped_and_restarted_no_dead_letters_for_good_records(private_stack, tmp_path):
    topic = "restart-registry"
    endpoints = private_stack.endpoints(topic)
    publish(endpoints, _events(3, 2000, [1]), [1], partitions=6, progress=False)
    env = service_env(private_stack, topic, tmp_path, registry_retry_backoff_s=0.2, unknown_schema_retries=2)
    proc = start_service(env, log=tmp_path / "ingest.log")
    try:
        _wait_rows(tmp_path, 2000, proc)
        v3 = load_version(3).message_class
        v3_id = _register(private_stack, f"{topic}-value", 3)  # known to the registry, not yet to the service
        process.stop(private_stack.registry())
        records = [
            (b"k", wire.frame(v3_id, v3(event_id=f"late-{i}", platform="pc").SerializeToString()))
            for i in range(500)
        ]
        produce_raw(private_stack.bootstrap_servers, topic, records, partition=2)
        time.sleep(6)  # several bounded lookup attempts fail meanwhile
        assert proc.poll() is None and bronze(tmp_path).num_rows == 2000
        process.start(private_stack.registry())
        _wait_rows(tmp_path, 2500, proc)
        proc.send_signal(signal.SIGTERM)
        assert proc.wait(timeout=60) == 0
    finally:
        if proc.poll() is None:
            proc.kill()
    assert table(tmp_path, "dead_letters").num_rows == 0
    kinds = [e["kind"] for e in table(tmp_path, "ingest_event_log").to_pylist()]
    assert "registry_unavailable" in kinds
    assert_exactly_once(tmp_path, private_stack.bootstrap_servers, topic)


def _register(stack: PrivateStack, subject: str, version: int) -> int:
    file = load_version(version).file_descriptor_proto
    ref = SchemaReference("google/protobuf/timestamp.proto", "google/protobuf/timestamp.proto", 1)
    schema = Schema(base64.b64encode(file.SerializeToString()).decode(), "PROTOBUF", [ref])
    client = registry_client(stack.registry_url)
    if "google/protobuf/timestamp.proto" not in client.get_subjects():
        from google.protobuf import timestamp_pb2

        raw = base64.b64encode(timestamp_pb2.DESCRIPTOR.serialized_pb).decode()
        client.register_schema("google/protobuf/timestamp.proto", Schema(raw, "PROTOBUF"))
    return client.register_schema(subject, schema)


def _dlq_started(env: dict[str, str], *args: str) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [sys.executable, "-m", "ingest.cli", "dlq", *args],
        env=env,
        cwd=PROJECT_DIR,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )


def _dlq(env: dict[str, str], *args: str) -> subprocess.CompletedProcess[str]:
    proc = _dlq_started(env, *args)
    out, err = proc.communicate()
    return subprocess.CompletedProcess(proc.args, proc.returncode, out, err)


def test_dlq_replay_after_the_schema_is_registered_lands_once(private_stack, tmp_path):
    topic = "replay"
    endpoints = private_stack.endpoints(topic)
    ensure_topic(endpoints, partitions=1)
    v1_id = _register(private_stack, f"{topic}-value", 1)
    future_id = v1_id + 1  # the id the registry gives the next new schema (a private registry: no one else)
    v2 = load_version(2).message_class
    records = [
        (b"k", wire.frame(future_id, v2(event_id=f"e{i}", score=i).SerializeToString())) for i in range(20)
    ]
    produce_raw(private_stack.bootstrap_servers, topic, records)
    env = service_env(private_stack, topic, tmp_path, unknown_schema_retries=1, registry_retry_backoff_s=0.1)
    assert run_service(env, log=tmp_path / "ingest.log") == 0
    letters = table(tmp_path, "dead_letters")
    assert letters.num_rows == 20 and set(letters["stage"].to_pylist()) == {"schema_lookup"}

    assert _register(private_stack, f"{topic}-value", 2) == future_id  # the fix: the schema exists now
    first = _dlq(env, "replay", "--stage", "schema_lookup")
    assert first.returncode == 0, first.stderr
    assert '"landed": 20' in first.stdout
    rows = bronze(tmp_path)
    assert sorted(rows["score"].to_pylist()) == list(range(20))

    # A crash after landing but before stamping replayed_at: the rerun must not duplicate.
    DeltaTable(str(tmp_path / "bronze" / "dead_letters")).update(updates={"replayed_at": "null"})
    second = _dlq(env, "replay")
    assert second.returncode == 0, second.stderr
    assert '"landed": 0' in second.stdout and '"already_in_bronze": 20' in second.stdout
    assert bronze(tmp_path).num_rows == 20
    assert "0 dead letters not replayed" in _dlq(env, "list").stdout


def test_two_dlq_replays_at_once_land_each_record_once(private_stack, tmp_path):
    topic = "replay-twice-at-once"
    ensure_topic(private_stack.endpoints(topic), partitions=1)
    v1_id = _register(private_stack, f"{topic}-value", 1)
    future_id = _an_unused_schema_id(private_stack)
    v1, v4 = load_version(1).message_class, load_version(4).message_class
    good = [(b"k", wire.frame(v1_id, v1(event_id=f"ok{i}").SerializeToString())) for i in range(10)]
    late = [
        (b"k", wire.frame(future_id, v4(event_id=f"e{i}", score=i).SerializeToString())) for i in range(30)
    ]
    unframed = [(b"k", b"not the wire format") for _ in range(5)]  # stays a dead letter
    produce_raw(private_stack.bootstrap_servers, topic, good + late + unframed)
    env = service_env(private_stack, topic, tmp_path, unknown_schema_retries=1, registry_retry_backoff_s=0.1)
    assert run_service(env, log=tmp_path / "ingest.log") == 0
    assert bronze(tmp_path).num_rows == 10 and table(tmp_path, "dead_letters").num_rows == 35

    _register_v4_as(private_stack, f"{topic}-value", future_id)  # the fix
    # Both replays find the 30 records missing: each waits after writing its files, so both have
    # checked bronze before either commits. The fence lets one land them; the other starts over.
    held = {**env, "GAMELAKE_TEST_HOOKS": f"sleep@files_written:{REPLAY_HOLD_S}"}
    replays = [_dlq_started(held, "replay") for _ in range(2)]
    try:
        outputs = [proc.communicate(timeout=180) for proc in replays]
    finally:
        for proc in replays:
            if proc.poll() is None:
                proc.kill()
    for proc, (_, err) in zip(replays, outputs, strict=True):
        assert proc.returncode == 0, err
    results = [json.loads(out.splitlines()[-1]) for out, _ in outputs]
    assert sorted(r["fenced"] for r in results) == [0, 1], f"the replays did not overlap: {results}"
    assert sorted(r["landed"] for r in results) == [0, 30], results
    for result in results:
        assert result["landed"] + result["already_in_bronze"] == 30, result
        assert result["still_failing"] == {"framing": 5}, result

    in_bronze = landed_coordinates(tmp_path, "game_events")
    assert len(in_bronze) == len(set(in_bronze)) == 40, "a record landed in bronze twice"
    letters = table(tmp_path, "dead_letters").to_pylist()
    waiting = {(r["_kafka_partition"], r["_kafka_offset"]) for r in letters if r["replayed_at"] is None}
    replayed = {(r["_kafka_partition"], r["_kafka_offset"]) for r in letters if r["replayed_at"] is not None}
    assert len(waiting) == 5 and len(replayed) == 30 and replayed <= set(in_bronze)
    assert waiting.isdisjoint(in_bronze)
    assert set(in_bronze) | waiting == kafka_coordinates(private_stack.bootstrap_servers, topic)
    assert "5 dead letters not replayed" in _dlq(env, "list").stdout


def _an_unused_schema_id(stack: PrivateStack) -> int:
    """An id above every id this private registry has given out (no one else registers here)."""
    client = registry_client(stack.registry_url)
    ids = [
        client.get_version(subject, version).schema_id
        for subject in client.get_subjects()
        for version in client.get_versions(subject)
    ]
    return max(ids) + 3  # ids also advance for versions no subject listing shows


def _register_v4_as(stack: PrivateStack, subject: str, schema_id: int) -> None:
    """The fix: register v4 (as distinct variants, each a new id) until ``schema_id`` is v4."""
    client = registry_client(stack.registry_url)
    ref = SchemaReference("google/protobuf/timestamp.proto", "google/protobuf/timestamp.proto", 1)
    for n in range(10):
        file = load_version(4).file_descriptor_proto.__class__()
        file.CopyFrom(load_version(4).file_descriptor_proto)
        # same messages, content new to the registry (another test's variants would be reused)
        file.options.java_package = f"gamelake.variant.{subject.replace('-', '_')}.v{n}"
        raw = base64.b64encode(file.SerializeToString()).decode()
        got = client.register_schema(subject, Schema(raw, "PROTOBUF", [ref]))
        if got >= schema_id:
            assert got == schema_id, f"the registry skipped id {schema_id}"
            return
    raise AssertionError(f"id {schema_id} not reached")


def test_dlq_replay_from_the_topic_sink_lands_once(private_stack, tmp_path):
    topic, dlq = "replay-topic-sink", "replay-topic-sink-dead-letters"
    for name in (topic, dlq):
        ensure_topic(private_stack.endpoints(name), partitions=1)
    _register(private_stack, f"{topic}-value", 1)
    future_id = _an_unused_schema_id(private_stack)
    v4 = load_version(4).message_class
    records = [
        (b"k", wire.frame(future_id, v4(event_id=f"e{i}", score=i).SerializeToString())) for i in range(12)
    ]
    produce_raw(private_stack.bootstrap_servers, topic, records)
    env = service_env(
        private_stack,
        topic,
        tmp_path,
        dead_letter_sink="topic",
        dead_letter_topic=dlq,
        unknown_schema_retries=1,
        registry_retry_backoff_s=0.1,
    )
    assert run_service(env, log=tmp_path / "ingest.log") == 0
    assert bronze(tmp_path).num_rows == 0
    assert "12 dead letters not replayed" in _dlq(env, "list").stdout

    _register_v4_as(private_stack, f"{topic}-value", future_id)  # the fix
    first = _dlq(env, "replay", "--stage", "schema_lookup")
    assert first.returncode == 0, first.stderr
    assert '"landed": 12' in first.stdout, first.stdout
    assert sorted(bronze(tmp_path)["score"].to_pylist()) == list(range(12))

    # The topic cannot be stamped: its dead letters are still there, and replaying them again
    # (a rerun, or a crash before anything could be recorded) must not duplicate a row.
    from ingest.core.settings.ingest_settings import load_settings
    from ingest.ops.dlq_command import read_topic, replay

    settings = load_settings(
        bootstrap_servers=private_stack.bootstrap_servers,
        registry_url=private_stack.registry_url,
        topics=[topic],
        warehouse_dir=tmp_path,
        dead_letter_sink="topic",
        dead_letter_topic=dlq,
    )
    again = replay(settings, read_topic(settings))
    assert again["landed"] == 0 and again["already_in_bronze"] == 12, again
    assert bronze(tmp_path).num_rows == 12
    assert "0 dead letters not replayed" in _dlq(env, "list").stdout
