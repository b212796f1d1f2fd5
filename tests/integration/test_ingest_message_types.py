"""Several message types on one topic land in bronze's one table, each row with its type.

Two ways a studio sends more than one type, both through confluent-kafka's ProtobufSerializer:

* one .proto file holding several messages, registered once under the topic's subject; the
  wire format's message indexes name the type: [0] the first, [1] the second, [1, 0] a type
  nested in the second;
* ``RecordNameStrategy``: each record type its own file and its own subject (its full name),
  all on one topic.

Each case lands with ``_message_type`` (the type's full name), every value equal to what was
sent, and bronze + dead letters = Kafka. The types number their fields on their own (#1 is
another field in each), which the schema guard allows: numbers belong to a type.
"""

from __future__ import annotations

import datetime as dt
import uuid

import pytest
from confluent_kafka.schema_registry import record_subject_name_strategy
from confluent_kafka.schema_registry.protobuf import ProtobufSerializer
from confluent_kafka.serialization import MessageField, SerializationContext
from gamelake_dev.producer.publish import SERIALIZER_CONF, ensure_topic, schema_id_of
from google.protobuf import descriptor_pb2, descriptor_pool, message_factory, timestamp_pb2
from google.protobuf.message import Message

from ingest.landing.decode import wire_format as wire
from tests.expected_rows import expected_row
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
TIMESTAMP = ".google.protobuf.Timestamp"
AT = dt.datetime(2026, 3, 1, 12, 0, tzinfo=dt.UTC)
# As the demo producer configures it (a reference to timestamp.proto, the subject strategy named
# explicitly: the default first asks for "associations", which Apicurio does not serve).
RECORD_NAME_CONF = {**SERIALIZER_CONF, "subject.name.strategy": record_subject_name_strategy}


def _add(
    message: descriptor_pb2.DescriptorProto, name: str, number: int, kind: int, type_name: str = ""
) -> None:
    added = message.field.add(name=name, number=number, type=kind, label=F.LABEL_OPTIONAL)
    if type_name:
        added.type_name = type_name


def _match(file: descriptor_pb2.FileDescriptorProto) -> None:
    match = file.message_type.add(name="Match")
    _add(match, "event_id", 1, F.TYPE_STRING)
    _add(match, "gamer_id", 2, F.TYPE_STRING)
    _add(match, "event_timestamp", 3, F.TYPE_MESSAGE, TIMESTAMP)
    _add(match, "score", 4, F.TYPE_INT64)
    _add(match, "ranked", 5, F.TYPE_BOOL)


def _purchase(file: descriptor_pb2.FileDescriptorProto, with_refund: bool) -> None:
    purchase = file.message_type.add(name="Purchase")
    _add(purchase, "purchase_id", 1, F.TYPE_STRING)  # #1 is event_id in Match
    _add(purchase, "event_timestamp", 2, F.TYPE_MESSAGE, TIMESTAMP)  # #3 in Match
    _add(purchase, "gamer_id", 3, F.TYPE_STRING)  # #2 in Match
    _add(purchase, "price", 4, F.TYPE_DOUBLE)
    _add(purchase, "currency", 5, F.TYPE_STRING)
    if with_refund:
        refund = purchase.nested_type.add(name="Refund")
        _add(refund, "refund_id", 1, F.TYPE_STRING)
        _add(refund, "price", 2, F.TYPE_DOUBLE)


def _file(package: str, name: str, *messages) -> descriptor_pb2.FileDescriptorProto:
    file = descriptor_pb2.FileDescriptorProto(name=f"{package}/{name}", package=package, syntax="proto3")
    file.dependency.append("google/protobuf/timestamp.proto")
    for add in messages:
        add(file)
    return file


def _classes(*files: descriptor_pb2.FileDescriptorProto) -> dict[str, type[Message]]:
    """Generated-like classes of every message of ``files`` (nested too), by their short path."""
    pool = descriptor_pool.DescriptorPool()
    timestamp = descriptor_pb2.FileDescriptorProto()
    timestamp_pb2.DESCRIPTOR.CopyToProto(timestamp)
    pool.Add(timestamp)
    classes = {}
    for file in files:
        pool.Add(file)
        for message in file.message_type:
            full = f"{file.package}.{message.name}"
            classes[message.name] = message_factory.GetMessageClass(pool.FindMessageTypeByName(full))
            for nested in message.nested_type:
                nested_full = f"{full}.{nested.name}"
                classes[f"{message.name}.{nested.name}"] = message_factory.GetMessageClass(
                    pool.FindMessageTypeByName(nested_full)
                )
    return classes


def _match_event(cls: type[Message], i: int) -> Message:
    event = cls(event_id=f"m-{i}", gamer_id=f"g-{i % 4}", score=100 * i, ranked=i % 2 == 0)
    event.event_timestamp.FromDatetime(AT + dt.timedelta(minutes=i))
    return event


def _purchase_event(cls: type[Message], i: int) -> Message:
    event = cls(purchase_id=f"p-{i}", gamer_id=f"g-{i % 4}", price=0.25 * i, currency=["EUR", "USD"][i % 2])
    if i % 5:  # every fifth without a time: NULL in bronze, dated by its Kafka timestamp
        event.event_timestamp.FromDatetime(AT + dt.timedelta(seconds=i))
    return event


def _refund_event(cls: type[Message], i: int) -> Message:
    return cls(refund_id=f"r-{i}", price=-0.25 * i)


def _produce(stack, topic: str, serializers: dict[str, ProtobufSerializer], events: list[Message]) -> list:
    """Serialize each event with its type's serializer and produce it (two partitions, in turn).

    Returns [(partition, framed value, event)] in the order each partition received them."""
    ctx = SerializationContext(topic, MessageField.VALUE)
    sent = []
    for i, event in enumerate(events):
        framed = serializers[event.DESCRIPTOR.full_name](event, ctx)
        assert framed is not None
        sent.append((i % 2, framed, event))
    for partition in (0, 1):
        records = [(b"k", framed) for p, framed, _ in sent if p == partition]
        produce_raw(stack.bootstrap_servers, topic, records, partition=partition)
    return sent


def _assert_landed_as_sent(warehouse, sent: list) -> None:
    """Every bronze row is the record produced at its partition and offset, field by field."""
    rows = bronze(warehouse).to_pylist()
    assert len(rows) == len(sent), "every record is a row: none was dead-lettered"
    produced = {
        partition: [(framed, event) for p, framed, event in sent if p == partition] for partition in (0, 1)
    }
    columns = [c for c in rows[0] if not c.startswith("_") and c != "event_date"]
    for row in rows:
        framed, event = produced[row["_kafka_partition"]][row["_kafka_offset"]]
        want = expected_row(event, columns)
        assert {k: row[k] for k in want} == want, (row["_kafka_partition"], row["_kafka_offset"])
        assert row["_schema_id"] == schema_id_of(framed)


def test_a_file_with_several_types_lands_the_second_and_a_nested_type_with_their_names(
    stack, fresh_topic, tmp_path
):
    ensure_topic(stack.endpoints(fresh_topic), partitions=2)
    package = f"studio_{uuid.uuid4().hex[:8]}"
    file = _file(package, "events.proto", _match, lambda f: _purchase(f, with_refund=True))
    classes = _classes(file)
    client = registry_client(stack.registry_url)
    serializers = {
        cls.DESCRIPTOR.full_name: ProtobufSerializer(cls, client, SERIALIZER_CONF) for cls in classes.values()
    }
    events = [_purchase_event(classes["Purchase"], i) for i in range(30)]
    events += [_match_event(classes["Match"], i) for i in range(10)]
    events += [_refund_event(classes["Purchase.Refund"], i) for i in range(6)]
    sent = _produce(stack, fresh_topic, serializers, events)

    assert len({schema_id_of(framed) for _, framed, _ in sent}) == 1, "one file, registered once"
    indexes = {event.DESCRIPTOR.full_name: wire.parse(framed).message_indexes for _, framed, event in sent}
    assert indexes == {
        f"{package}.Match": (0,),
        f"{package}.Purchase": (1,),
        f"{package}.Purchase.Refund": (1, 0),
    }
    assert {framed[5] for _, framed, event in sent if event.DESCRIPTOR.name == "Match"} == {0}, (
        "the [0] shorthand"
    )

    log = tmp_path / "ingest.log"
    assert run_service(service_env(stack, fresh_topic, tmp_path), log=log) == 0, log.read_text()[-3000:]

    _assert_landed_as_sent(tmp_path, sent)
    types = sorted({r["_message_type"] for r in bronze(tmp_path).to_pylist()})
    assert types == [f"{package}.Match", f"{package}.Purchase", f"{package}.Purchase.Refund"]
    assert_exactly_once(tmp_path, stack.bootstrap_servers, fresh_topic)


def test_record_name_strategy_lands_two_record_types_of_one_topic_each_with_its_name(
    stack, fresh_topic, tmp_path
):
    ensure_topic(stack.endpoints(fresh_topic), partitions=2)
    package = f"studio_{uuid.uuid4().hex[:8]}"
    match_file = _file(package, "match.proto", _match)
    purchase_file = _file(package, "purchase.proto", lambda f: _purchase(f, with_refund=False))
    classes = _classes(match_file, purchase_file)
    client = registry_client(stack.registry_url)
    serializers = {
        cls.DESCRIPTOR.full_name: ProtobufSerializer(cls, client, RECORD_NAME_CONF)
        for cls in classes.values()
    }
    events = []
    for i in range(20):
        events.append(_match_event(classes["Match"], i))
        if i % 2:
            events.append(_purchase_event(classes["Purchase"], i))
    sent = _produce(stack, fresh_topic, serializers, events)

    subjects = set(client.get_subjects())
    assert {f"{package}.Match", f"{package}.Purchase"} <= subjects, "each type under its own subject"
    assert f"{fresh_topic}-value" not in subjects
    match_id = client.get_latest_version(f"{package}.Match").schema_id
    purchase_id = client.get_latest_version(f"{package}.Purchase").schema_id
    assert match_id != purchase_id
    assert {schema_id_of(framed) for _, framed, _ in sent} == {match_id, purchase_id}

    log = tmp_path / "ingest.log"
    assert run_service(service_env(stack, fresh_topic, tmp_path), log=log) == 0, log.read_text()[-3000:]

    _assert_landed_as_sent(tmp_path, sent)
    names = {r["_schema_id"]: r["_message_type"] for r in bronze(tmp_path).to_pylist()}
    assert names == {match_id: f"{package}.Match", purchase_id: f"{package}.Purchase"}
    assert_exactly_once(tmp_path, stack.bootstrap_servers, fresh_topic)
