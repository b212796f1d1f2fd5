"""The studio schema through the real Kafka and registry: every shape lands natively, live.

confluent-kafka's ProtobufSerializer in its default configuration registers the studio's
``common.proto`` as a subject of its own (a reference) and the well-known imports not at all.
Version 1 is produced, then version 2 (a new field inside a nested message) to the running
service, which widens the struct without a restart. Every row is compared field by field with
what was sent, NULL for what was unset, and bronze + dead letters = Kafka.
"""

from __future__ import annotations

import signal

import pytest
from confluent_kafka.schema_registry import SchemaRegistryClient
from confluent_kafka.schema_registry.protobuf import ProtobufSerializer
from confluent_kafka.serialization import MessageField, SerializationContext

from ingest.dev.producer.publish import ensure_topic
from tests.integration.ingest_support import (
    assert_exactly_once,
    bronze,
    produce_raw,
    service_env,
    start_service,
    table,
    wait_until,
)
from tests.studio_schema import comparable, expected, matches, studio_schema

pytestmark = pytest.mark.integration


def _produce(stack, topic: str, version: int, count: int):
    sent = matches(version, count, seed=version)
    serialize = ProtobufSerializer(
        studio_schema(version).match_class, SchemaRegistryClient({"url": stack.registry_url})
    )
    context = SerializationContext(topic, MessageField.VALUE)
    produce_raw(stack.bootstrap_servers, topic, [(b"k", serialize(m, context)) for m in sent])
    return sent


def _rows(warehouse) -> int:
    try:
        return bronze(warehouse).num_rows
    except Exception:  # the table does not exist yet
        return 0


def test_every_shape_lands_natively_and_a_nested_field_widens_the_struct_live(stack, fresh_topic, tmp_path):
    ensure_topic(stack.endpoints(fresh_topic), partitions=1)
    first = _produce(stack, fresh_topic, 1, 60)
    registered = SchemaRegistryClient({"url": stack.registry_url}).get_latest_version(f"{fresh_topic}-value")
    assert [r.name for r in registered.schema.references] == ["studio/common.proto"], "a reference, no WKT"

    log = tmp_path / "ingest.log"
    proc = start_service(service_env(stack, fresh_topic, tmp_path), log=log)
    try:
        wait_until(lambda: _rows(tmp_path) >= 60 or proc.poll() is not None, 120, "version 1 to land")
        second = _produce(stack, fresh_topic, 2, 60)
        wait_until(lambda: _rows(tmp_path) >= 120 or proc.poll() is not None, 120, "version 2 to land")
        assert proc.poll() is None, log.read_text()[-3000:]
        proc.send_signal(signal.SIGTERM)
        assert proc.wait(timeout=60) == 0, log.read_text()[-3000:]
    finally:
        if proc.poll() is None:
            proc.kill()

    rows = {r["event_id"]: r for r in bronze(tmp_path).to_pylist()}
    assert len(rows) == 120
    for m in first:
        want = expected(m)
        if want["loadout"] is not None:
            want["loadout"]["skin"] = None  # landed before the struct widened
        assert comparable(rows[m.event_id]) == want, m.event_id
    for m in second:
        assert comparable(rows[m.event_id]) == expected(m), m.event_id
    kinds = [e["kind"] for e in table(tmp_path, "ingest_event_log").to_pylist()]
    assert kinds.count("start") == 1 and kinds.count("schema_evolved") == 2
    assert table(tmp_path, "dead_letters").num_rows == 0
    assert_exactly_once(tmp_path, stack.bootstrap_servers, fresh_topic)
