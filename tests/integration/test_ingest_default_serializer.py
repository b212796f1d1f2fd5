"""Schemas registered by confluent-kafka's ProtobufSerializer in its default configuration.

Its default ``skip.known.types`` registers a schema that imports google/protobuf/timestamp.proto
and wrappers.proto without references to them. Building such a schema once raised TypeError
outside any record and ended the service, for every studio. The ingest now takes well-known
imports from the protobuf runtime.
"""

from __future__ import annotations

import datetime as dt

import pytest
from confluent_kafka.schema_registry.protobuf import ProtobufSerializer
from confluent_kafka.serialization import MessageField, SerializationContext
from gamelake_dev.producer.publish import ensure_topic
from google.protobuf import descriptor_pb2, descriptor_pool, message_factory, timestamp_pb2, wrappers_pb2

from tests.integration.ingest_support import (
    assert_exactly_once,
    bronze,
    produce_raw,
    registry_client,
    run_service,
    service_env,
)

pytestmark = pytest.mark.integration
F = descriptor_pb2.FieldDescriptorProto


def _studio_event_class():
    file = descriptor_pb2.FileDescriptorProto(name="studio/match.proto", package="studio", syntax="proto3")
    file.dependency.extend(["google/protobuf/timestamp.proto", "google/protobuf/wrappers.proto"])
    message = file.message_type.add(name="Match")
    message.field.add(name="event_id", number=1, type=F.TYPE_STRING, label=F.LABEL_OPTIONAL)
    message.field.add(
        name="event_timestamp", number=2, type=F.TYPE_MESSAGE, type_name=".google.protobuf.Timestamp"
    )
    message.field.add(
        name="nickname", number=3, type=F.TYPE_MESSAGE, type_name=".google.protobuf.StringValue"
    )
    pool = descriptor_pool.DescriptorPool()
    for known in (timestamp_pb2, wrappers_pb2):
        proto = descriptor_pb2.FileDescriptorProto()
        known.DESCRIPTOR.CopyToProto(proto)
        pool.Add(proto)
    pool.Add(file)
    return message_factory.GetMessageClass(pool.FindMessageTypeByName("studio.Match"))


def test_a_default_configured_serializers_schema_lands(stack, fresh_topic, tmp_path):
    ensure_topic(stack.endpoints(fresh_topic), partitions=1)
    match = _studio_event_class()
    serialize = ProtobufSerializer(match, registry_client(stack.registry_url))  # defaults
    ctx = SerializationContext(fresh_topic, MessageField.VALUE)
    at = dt.datetime(2026, 3, 1, 12, 0, tzinfo=dt.UTC)
    sent = []
    for i in range(25):
        event = match(event_id=f"d-{i}")
        event.event_timestamp.FromDatetime(at + dt.timedelta(seconds=i))
        event.nickname.value = f"nick-{i}"
        sent.append(event)
    produce_raw(stack.bootstrap_servers, fresh_topic, [(b"k", serialize(e, ctx)) for e in sent])
    registered = registry_client(stack.registry_url).get_latest_version(f"{fresh_topic}-value")
    assert not registered.schema.references, "the default serializer registers no reference to the imports"

    log = tmp_path / "ingest.log"
    assert run_service(service_env(stack, fresh_topic, tmp_path), log=log) == 0, log.read_text()[-3000:]

    rows = sorted(bronze(tmp_path).to_pylist(), key=lambda r: r["event_id"])
    assert [r["event_id"] for r in rows] == sorted(e.event_id for e in sent)
    assert {r["event_timestamp"] for r in rows} == {at + dt.timedelta(seconds=i) for i in range(25)}
    assert [r["nickname"] for r in rows] == sorted(e.nickname.value for e in sent)  # a wrapper: its scalar
    assert_exactly_once(tmp_path, stack.bootstrap_servers, fresh_topic)
