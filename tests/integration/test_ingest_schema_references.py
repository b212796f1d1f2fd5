"""A schema whose references form a diamond (two imports that share a third), through the real registry."""

from __future__ import annotations

import base64

import pytest
from confluent_kafka.schema_registry import Schema, SchemaReference
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
)

pytestmark = pytest.mark.integration
F = descriptor_pb2.FieldDescriptorProto


def _file(name: str, imports: list[str], message: str, fields: list[tuple[str, str | None]]):
    file = descriptor_pb2.FileDescriptorProto(
        name=name, package="studio", syntax="proto3", dependency=imports
    )
    proto = file.message_type.add(name=message)
    for number, (field, type_name) in enumerate(fields, start=1):
        kind = F.TYPE_MESSAGE if type_name else F.TYPE_STRING
        added = proto.field.add(name=field, number=number, type=kind, label=F.LABEL_OPTIONAL)
        if type_name:
            added.type_name = type_name
    return file


def test_a_diamond_of_references_resolves_and_lands(stack, fresh_topic, tmp_path):
    common = _file("studio/common.proto", [], "Money", [("currency", None)])
    reward = _file("studio/reward.proto", [common.name], "Reward", [("amount", ".studio.Money")])
    cost = _file("studio/cost.proto", [common.name], "Cost", [("amount", ".studio.Money")])
    event = _file(
        "studio/event.proto",
        [reward.name, cost.name],
        "Event",
        [("event_id", None), ("reward", ".studio.Reward"), ("cost", ".studio.Cost")],
    )
    client = registry_client(stack.registry_url)

    def register(subject: str, file, refs: list[tuple[str, str]]) -> int:
        raw = base64.b64encode(file.SerializeToString()).decode()
        references = [SchemaReference(name, ref_subject, 1) for name, ref_subject in refs]
        return client.register_schema(subject, Schema(raw, "PROTOBUF", references))

    register(f"{fresh_topic}-common", common, [])
    register(f"{fresh_topic}-reward", reward, [(common.name, f"{fresh_topic}-common")])
    register(f"{fresh_topic}-cost", cost, [(common.name, f"{fresh_topic}-common")])
    schema_id = register(
        f"{fresh_topic}-value",
        event,
        [(reward.name, f"{fresh_topic}-reward"), (cost.name, f"{fresh_topic}-cost")],
    )

    pool = descriptor_pool.DescriptorPool()
    for file in (common, reward, cost, event):
        pool.Add(file)
    event_class = message_factory.GetMessageClass(pool.FindMessageTypeByName("studio.Event"))
    sent = []
    for i in range(10):
        message = event_class(event_id=f"diamond-{i}")
        message.reward.amount.currency = "gold"
        message.cost.amount.currency = "gems"
        sent.append(message)
    ensure_topic(stack.endpoints(fresh_topic), partitions=1)
    produce_raw(
        stack.bootstrap_servers,
        fresh_topic,
        [(b"k", wire_format.frame(schema_id, m.SerializeToString())) for m in sent],
    )

    log = tmp_path / "ingest.log"
    assert run_service(service_env(stack, fresh_topic, tmp_path), log=log) == 0, log.read_text()[-3000:]

    rows = sorted(bronze(tmp_path).to_pylist(), key=lambda r: r["event_id"])
    assert [r["event_id"] for r in rows] == sorted(m.event_id for m in sent)
    assert {r["reward"]["amount"]["currency"] for r in rows} == {"gold"}
    assert {r["cost"]["amount"]["currency"] for r in rows} == {"gems"}
    assert_exactly_once(tmp_path, stack.bootstrap_servers, fresh_topic)
