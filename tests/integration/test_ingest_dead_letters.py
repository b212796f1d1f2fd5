"""Every poison kind lands in dead letters with its offset; the good records around it land in bronze."""

from __future__ import annotations

import base64
import uuid

import pyarrow as pa
import pytest
from confluent_kafka.schema_registry import Schema, SchemaReference
from gamelake_dev.demo_schemas import MESSAGE_NAME, load_version
from gamelake_dev.producer.publish import ensure_topic, register_versions
from google.protobuf import descriptor_pb2, descriptor_pool, message_factory, timestamp_pb2

from ingest.landing.decode import wire_format as wire
from tests.integration.ingest_support import (
    assert_exactly_once,
    bronze,
    produce_raw,
    registry_client,
    run_service,
    service_env,
    table,
)

pytestmark = pytest.mark.integration


def _variant(stack, topic: str, change) -> tuple[int, type]:
    """Register a v2 variant (``change`` edits its GameEvent descriptor) under its own subject."""
    file = descriptor_pb2.FileDescriptorProto()
    file.CopyFrom(load_version(2).file_descriptor_proto)
    change(file.message_type[0])
    client = registry_client(stack.registry_url)
    ref = SchemaReference("google/protobuf/timestamp.proto", "google/protobuf/timestamp.proto", 1)
    schema = Schema(base64.b64encode(file.SerializeToString()).decode(), "PROTOBUF", [ref])
    schema_id = client.register_schema(f"{topic}-variant-{file.message_type[0].field[-1].name}", schema)
    pool = descriptor_pool.DescriptorPool()
    pool.Add(descriptor_pb2.FileDescriptorProto.FromString(timestamp_pb2.DESCRIPTOR.serialized_pb))
    pool.Add(file)
    return schema_id, message_factory.GetMessageClass(pool.FindMessageTypeByName(MESSAGE_NAME))


def _score_as_string(message: descriptor_pb2.DescriptorProto) -> None:
    message.field[7].type = descriptor_pb2.FieldDescriptorProto.TYPE_STRING  # score: int64 -> string


def _level_renamed(message: descriptor_pb2.DescriptorProto) -> None:
    message.field[8].name = "player_level"  # field #9 reused under another name


@pytest.fixture(scope="module")
def poisoned(stack, tmp_path_factory):
    topic = f"test-dlq-{uuid.uuid4().hex[:10]}"
    warehouse = tmp_path_factory.mktemp("warehouse")
    endpoints = stack.endpoints(topic)
    ensure_topic(endpoints, partitions=1)
    register_versions(endpoints, [2])
    v2 = load_version(2).message_class
    client = registry_client(stack.registry_url)
    good_id = client.get_latest_version(f"{topic}-value").schema_id

    def good(n: int) -> bytes:
        return wire.frame(
            good_id, v2(event_id=f"good-{n}", game_name="space_raiders", score=n).SerializeToString()
        )

    type_id, type_class = _variant(stack, topic, _score_as_string)
    reuse_id, reuse_class = _variant(stack, topic, _level_renamed)
    valid_payload = v2(event_id="x", game_name="space_raiders", device_id="d" * 40).SerializeToString()
    poison = {
        "framing:wrong_magic": b"\x01" + good(0)[1:],
        "framing:empty": b"",
        "framing:short": b"\x00\x00\x01",
        "framing:null": None,
        "decode:truncated": wire.frame(good_id, valid_payload[:-10]),
        "decode:invalid": wire.frame(good_id, b"\xff\xff\xff\xff\x0f\x0f"),
        "schema_lookup:unknown_id": wire.frame(987654, valid_payload),
        "schema_guard:type_change": wire.frame(
            type_id, type_class(event_id="t", score="high").SerializeToString()
        ),
        "schema_guard:number_reuse": wire.frame(
            reuse_id, reuse_class(event_id="r", player_level=3).SerializeToString()
        ),
    }
    records: list[tuple[bytes | None, bytes | None]] = [(b"k", good(1)), (b"k", good(2))]
    for i, value in enumerate(poison.values()):
        records += [(f"poison-{i}".encode(), value), (b"k", good(10 + i))]
    produce_raw(stack.bootstrap_servers, topic, records)
    env = service_env(stack, topic, warehouse, unknown_schema_retries=2, registry_retry_backoff_s=0.2)
    assert run_service(env, log=warehouse / "ingest.log") == 0, (warehouse / "ingest.log").read_text()[-3000:]
    return topic, warehouse, poison, records


def test_each_poison_kind_is_a_dead_letter_with_its_offset_stage_and_raw_bytes(poisoned):
    _, warehouse, poison, records = poisoned
    letters = {r["_kafka_offset"]: r for r in table(warehouse, "dead_letters").to_pylist()}
    assert len(letters) == len(poison)
    for i, (kind, value) in enumerate(poison.items()):
        offset = 2 + 2 * i  # records[offset] is this poison
        letter = letters[offset]
        assert letter["stage"] == kind.split(":")[0], (kind, letter["error"])
        assert letter["value"] == (value if value is not None else None) or (
            value == b"" and letter["value"] == b""
        )
        assert letter["_kafka_key"] == records[offset][0]
        assert letter["error"] and f"[0]@{offset}" in letter["error"]
        assert letter["dead_lettered_at"] is not None and letter["_kafka_partition"] == 0


def test_guard_errors_say_what_changed(poisoned):
    _, warehouse, _, _ = poisoned
    errors = {r["_kafka_offset"]: r["error"] for r in table(warehouse, "dead_letters").to_pylist()}
    assert "'score' changed type" in errors[2 + 2 * 7] and "int64" in errors[2 + 2 * 7]
    assert "#9 is reused" in errors[2 + 2 * 8]


def test_good_records_around_the_poison_land_and_nothing_is_lost(poisoned, stack):
    topic, warehouse, poison, _ = poisoned
    rows = bronze(warehouse)
    assert sorted(rows["event_id"].to_pylist()) == sorted(
        ["good-1", "good-2", *(f"good-{10 + i}" for i in range(len(poison)))]
    )
    assert "player_level" not in rows.column_names
    assert rows.schema.field("score").type == pa.int64()
    assert_exactly_once(warehouse, stack.bootstrap_servers, topic)
