"""Schemas registered as .proto text (what Java producers register), not base64 descriptors.

The registry client compiles text once per schema id with protoc, resolving the import of
google/protobuf/timestamp.proto through the schema's reference. This proves it end to end:
register text, produce with its id, let the service land it.
"""

from __future__ import annotations

import base64
import datetime as dt

import pytest
import requests
from confluent_kafka.schema_registry import Schema, SchemaReference
from gamelake_dev.demo_schemas import PROTO_DIR, PROTO_FILE, load_version
from gamelake_dev.producer.publish import ensure_topic
from google.protobuf import timestamp_pb2

from ingest.landing.decode import wire_format as wire
from tests.integration.ingest_support import (
    assert_exactly_once,
    bronze,
    produce_raw,
    registry_client,
    run_service,
    service_env,
)

pytestmark = pytest.mark.integration
TIMESTAMP = "google/protobuf/timestamp.proto"


def _register_text(stack, subject: str, version: int) -> int:
    """Register ``version``'s .proto source as text, with the timestamp import as a reference."""
    client = registry_client(stack.registry_url)
    if TIMESTAMP not in client.get_subjects():
        raw = base64.b64encode(timestamp_pb2.DESCRIPTOR.serialized_pb).decode()
        client.register_schema(TIMESTAMP, Schema(raw, "PROTOBUF"))
    text = (PROTO_DIR / f"v{version}" / PROTO_FILE).read_text()
    text += f"\n// registered as text by {subject}\n"  # content of its own: a fresh id
    ref = SchemaReference(TIMESTAMP, TIMESTAMP, client.get_latest_version(TIMESTAMP).version)
    return client.register_schema(subject, Schema(text, "PROTOBUF", [ref]))


def test_messages_of_a_schema_registered_as_proto_text_are_decoded_and_land(stack, fresh_topic, tmp_path):
    ensure_topic(stack.endpoints(fresh_topic), partitions=1)
    schema_id = _register_text(stack, f"{fresh_topic}-value", 3)
    stored = requests.get(f"{stack.registry_url}/schemas/ids/{schema_id}", timeout=10).json()
    assert stored["schema"].lstrip().startswith('syntax = "proto3"'), stored["schema"][
        :80
    ]  # text, not base64
    assert [r["name"] for r in stored["references"]] == [TIMESTAMP]

    v3 = load_version(3).message_class
    at = dt.datetime(2026, 5, 17, 12, 30, tzinfo=dt.UTC)
    records = []
    for i in range(50):
        event = v3(event_id=f"text-{i}", game_name="kart_legends", score=i, level=i % 7, platform="pc")
        event.event_timestamp.FromDatetime(at)
        records.append((f"k{i}".encode(), wire.frame(schema_id, event.SerializeToString())))
    produce_raw(stack.bootstrap_servers, fresh_topic, records)

    env = service_env(stack, fresh_topic, tmp_path, unknown_schema_retries=1, registry_retry_backoff_s=0.1)
    assert run_service(env, log=tmp_path / "ingest.log") == 0, (tmp_path / "ingest.log").read_text()[-3000:]
    rows = sorted(bronze(tmp_path).to_pylist(), key=lambda r: r["score"])
    assert [r["event_id"] for r in rows] == [f"text-{i}" for i in range(50)]
    assert {r["_schema_id"] for r in rows} == {schema_id}
    assert [r["level"] for r in rows] == [i % 7 for i in range(50)] and {r["platform"] for r in rows} == {
        "pc"
    }
    assert {r["event_timestamp"] for r in rows} == {at} and {r["event_date"] for r in rows} == {at.date()}
    assert_exactly_once(tmp_path, stack.bootstrap_servers, fresh_topic)
