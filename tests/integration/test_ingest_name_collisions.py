"""A producer schema with fields named like staging's own columns, through the real registry.

The ingest lands such fields as sent (bronze keeps the producer's names) and says, in its log
and event log, that staging will rename them by the contract's passthrough_prefix rule. The dbt
side of the rule is tests/integration/test_dbt_project.py's
test_producer_fields_named_like_staging_columns_reach_staging_renamed.
"""

from __future__ import annotations

import base64

import pytest
from confluent_kafka.schema_registry import Schema
from gamelake_dev.producer.publish import ensure_topic
from google.protobuf import descriptor_pb2, descriptor_pool, message_factory

from ingest.landing.decode import wire_format
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

FIELDS = [  # (name, proto type); schema_id, event_at and ingested_at are staging column names
    ("event_id", descriptor_pb2.FieldDescriptorProto.TYPE_STRING),
    ("game_name", descriptor_pb2.FieldDescriptorProto.TYPE_STRING),
    ("gamer_id", descriptor_pb2.FieldDescriptorProto.TYPE_STRING),
    ("event_type", descriptor_pb2.FieldDescriptorProto.TYPE_STRING),
    ("schema_id", descriptor_pb2.FieldDescriptorProto.TYPE_INT64),
    ("event_at", descriptor_pb2.FieldDescriptorProto.TYPE_STRING),
    ("ingested_at", descriptor_pb2.FieldDescriptorProto.TYPE_STRING),
]


def _studio_schema() -> descriptor_pb2.FileDescriptorProto:
    file = descriptor_pb2.FileDescriptorProto(name="studio/event.proto", package="studio", syntax="proto3")
    message = file.message_type.add(name="StudioEvent")
    for number, (name, kind) in enumerate(FIELDS, start=1):
        message.field.add(name=name, number=number, type=kind, label=1)
    return file


def test_fields_named_like_staging_columns_land_as_sent_and_the_rename_is_announced(
    stack, fresh_topic, tmp_path
):
    ensure_topic(stack.endpoints(fresh_topic), partitions=1)
    file = _studio_schema()
    raw = base64.b64encode(file.SerializeToString()).decode()
    schema_id = registry_client(stack.registry_url).register_schema(
        f"{fresh_topic}-value", Schema(raw, "PROTOBUF")
    )
    pool = descriptor_pool.DescriptorPool()
    pool.Add(file)
    studio_event = message_factory.GetMessageClass(pool.FindMessageTypeByName("studio.StudioEvent"))
    sent = [
        studio_event(
            event_id=f"c-{i}",
            game_name="kart_legends",
            gamer_id="g1",
            event_type="level_up",
            schema_id=1000 + i,
            event_at=f"{i}:00 local",
            ingested_at="client clock",
        )
        for i in range(20)
    ]
    produce_raw(
        stack.bootstrap_servers,
        fresh_topic,
        [(b"g1", wire_format.frame(schema_id, m.SerializeToString())) for m in sent],
    )

    log = tmp_path / "ingest.log"
    assert run_service(service_env(stack, fresh_topic, tmp_path), log=log) == 0, log.read_text()[-3000:]

    rows = sorted(bronze(tmp_path).to_pylist(), key=lambda r: r["_kafka_offset"])
    assert [(r["schema_id"], r["event_at"], r["ingested_at"]) for r in rows] == [
        (m.schema_id, m.event_at, m.ingested_at) for m in sent
    ]
    assert {r["_schema_id"] for r in rows} == {schema_id}
    announced = "schema_id -> proto_schema_id, event_at -> proto_event_at, ingested_at -> proto_ingested_at"
    assert announced in log.read_text() and f"schema id(s) [{schema_id}]" in log.read_text()
    messages = table(tmp_path, "ingest_event_log").column("message").to_pylist()
    assert any(announced in (m or "") for m in messages)
    assert_exactly_once(tmp_path, stack.bootstrap_servers, fresh_topic)
