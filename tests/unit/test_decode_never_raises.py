"""Nothing in a message or a schema ends the service: random bytes and random schemas through decode.

Property-based (hypothesis): every record comes out as a bronze row or a dead letter, and no
exception escapes, whatever the payload and whatever valid schema a producer registered,
including well-known imports registered without references (confluent-kafka's default).
"""

from __future__ import annotations

import base64

import pytest
from confluent_kafka import Message
from google.protobuf import descriptor_pb2, message_factory
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from ingest.core.settings.ingest_settings import IngestSettings
from ingest.landing.decode import wire_format
from ingest.landing.decode.decoder import Decoder
from ingest.landing.decode.schema_guard import KnownColumns
from ingest.landing.decode.schema_registry import SchemaRegistryClient, build_schema
from tests.random_schemas import schemas

F = descriptor_pb2.FieldDescriptorProto


_VALUES = {
    F.TYPE_BOOL: True,
    F.TYPE_STRING: "s",
    F.TYPE_BYTES: b"\xff",
    F.TYPE_DOUBLE: 1.5,
    F.TYPE_FLOAT: 2.5,
}


def _filled(message):
    """Every field set: scalars, repeated, maps, nested, and an Any naming a type nobody knows."""
    for field in message.DESCRIPTOR.fields:
        value = _VALUES.get(field.type, 7)
        if field.message_type is not None and field.message_type.GetOptions().map_entry:
            if field.message_type.fields_by_name["value"].message_type is None:
                getattr(message, field.name)["k"] = 7
            else:
                getattr(message, field.name)["k"].SetInParent()
        elif field.message_type is not None and field.is_repeated:
            getattr(message, field.name).add()
        elif field.message_type is not None and field.message_type.full_name == "google.protobuf.Any":
            getattr(message, field.name).type_url = "type.googleapis.com/studio.Unknown"
        elif field.message_type is not None:
            getattr(message, field.name).SetInParent()
        elif field.is_repeated:
            getattr(message, field.name).append(value)
        elif field.enum_type is not None:
            setattr(message, field.name, 1)
        else:
            setattr(message, field.name, value)
    return message


class _Registry:
    def __init__(self, file: descriptor_pb2.FileDescriptorProto) -> None:
        self.built = build_schema(1, file)

    def schema(self, schema_id):
        if schema_id != 1:
            from ingest.landing.decode.schema_registry import UnknownSchemaId

            raise UnknownSchemaId(f"schema id {schema_id} is not registered")
        return self.built


def _record(value: bytes | None, offset: int) -> Message:
    return Message(
        topic="t", partition=0, offset=offset, key=None, value=value, timestamp=(1, 1_700_000_000_000)
    )


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(file=schemas(), payloads=st.lists(st.binary(max_size=40), min_size=1, max_size=12), data=st.data())
def test_random_schemas_and_random_bytes_never_raise_and_every_record_is_accounted_for(file, payloads, data):
    registry = _Registry(file)
    descriptor = registry.built.pool.FindMessageTypeByName("rnd.Event")
    valid = _filled(message_factory.GetMessageClass(descriptor)()).SerializeToString()
    values: list[bytes | None] = []
    for payload in payloads:
        shape = data.draw(st.sampled_from(["framed", "framed_valid", "other_id", "raw", "none"]))
        values.append(
            {
                "framed": wire_format.frame(1, payload),
                "framed_valid": wire_format.frame(1, valid),
                "other_id": wire_format.frame(2, payload),
                "raw": payload,
                "none": None,
            }[shape]
        )
    records = [_record(value, offset) for offset, value in enumerate(values)]

    decoded = Decoder(registry, 0, 0.0).decode(records, KnownColumns())

    rows = decoded.table.num_rows if decoded.table is not None else 0
    assert rows + len(decoded.dead_letters) == len(records)
    assert {d.error.stage for d in decoded.dead_letters} <= {
        "framing",
        "schema_lookup",
        "decode",
        "schema_build",
    }


def _any_schema() -> descriptor_pb2.FileDescriptorProto:
    file = descriptor_pb2.FileDescriptorProto(name="studio/any.proto", package="studio", syntax="proto3")
    file.dependency.extend(["google/protobuf/any.proto", "google/protobuf/struct.proto"])  # no references
    message = file.message_type.add(name="Event")
    message.field.add(name="id", number=1, type=F.TYPE_STRING, label=F.LABEL_OPTIONAL)
    message.field.add(
        name="extra", number=2, type=F.TYPE_MESSAGE, type_name=".google.protobuf.Any", label=F.LABEL_OPTIONAL
    )
    message.field.add(
        name="data", number=3, type=F.TYPE_MESSAGE, type_name=".google.protobuf.Value", label=F.LABEL_OPTIONAL
    )
    return file


def test_a_message_whose_values_cannot_be_read_is_a_dead_letter_and_its_neighbours_land():
    registry = _Registry(_any_schema())
    event = message_factory.GetMessageClass(registry.built.pool.FindMessageTypeByName("studio.Event"))
    good, bad = event(id="a"), event(id="b")
    bad.extra.type_url = "type.googleapis.com/studio.Unknown"  # lands: an Any is a struct of its own
    bad.data.number_value = float("inf")  # JSON has no infinity: MessageToDict cannot render it
    records = [
        _record(wire_format.frame(1, m.SerializeToString()), i) for i, m in enumerate([good, bad, good])
    ]

    decoded = Decoder(registry, 0, 0.0).decode(records, KnownColumns())

    assert decoded.table is not None and decoded.table.column("id").to_pylist() == ["a", "a"]
    [letter] = decoded.dead_letters
    assert letter.record.offset() == 1 and letter.error.stage == "decode"
    assert "cannot read the message's values" in str(letter.error)


def test_a_schema_that_cannot_be_built_dead_letters_its_messages_with_a_stage_of_its_own(monkeypatch):
    file = _any_schema()
    file.dependency.append("studio/never_registered.proto")  # an import no reference brings
    with pytest.raises(TypeError):  # what protobuf raises, and what once ended the service
        build_schema(7, file)
    client = SchemaRegistryClient(IngestSettings(registry_url="http://127.0.0.1:1", metrics_port=0))
    stored = {"schemaType": "PROTOBUF", "schema": base64.b64encode(file.SerializeToString()).decode()}
    monkeypatch.setattr(client, "_get", lambda path, not_found: stored)  # the HTTP boundary only
    records = [_record(wire_format.frame(7, b"\x0a\x01a"), 0), _record(wire_format.frame(7, b""), 1)]

    decoded = Decoder(client, 0, 0.0).decode(records, KnownColumns())
    again = Decoder(client, 0, 0.0).decode(records[:1], KnownColumns())

    assert decoded.table is None and len(decoded.dead_letters) == 2
    assert {d.error.stage for d in decoded.dead_letters} == {"schema_build"}
    assert "schema id 7 cannot be built" in str(decoded.dead_letters[0].error)
    assert "studio/never_registered.proto" in str(decoded.dead_letters[0].error)
    assert again.dead_letters[0].error.stage == "schema_build" and client.lookups == 1, "remembered"
