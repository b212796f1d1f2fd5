"""Several message types in one bronze table: each row says its type, numbers are per type.

A registry schema is a .proto file; the wire format's message indexes name the type of each
record inside it ([1] is the file's second message, [1, 0] the first type nested in it). Every
type lands in bronze's one table with ``_message_type``, its full name. Real descriptors built
with the registry's own code, real wire-format bytes, real Delta tables (delta-rs).
"""

from __future__ import annotations

import datetime as dt
import time

import pyarrow as pa
from confluent_kafka import Message
from confluent_kafka import TopicPartition as KafkaTopicPartition
from deltalake import DeltaTable, write_deltalake
from gamelake_dev.demo_schemas import MESSAGE_NAME, load_version
from google.protobuf import descriptor_pb2, message_factory
from google.protobuf.message import Message as ProtoMessage

from ingest.core.settings.ingest_settings import IngestSettings
from ingest.landing.decode import wire_format as wire
from ingest.landing.decode.bronze_columns import KAFKA_COLUMNS, field_column
from ingest.landing.decode.decoder import Decoder
from ingest.landing.decode.schema_guard import KnownColumns
from ingest.landing.decode.schema_registry import RegistrySchema, build_schema
from ingest.landing.delta.bronze_format import TYPED_COLUMNS
from ingest.landing.delta.bronze_writer import BronzeWriter
from ingest.landing.kafka.ownership import PartitionOwnership
from ingest.landing.service.lander import Lander
from ingest.landing.side_tables.dead_letters import DeltaDeadLetters
from ingest.landing.side_tables.event_log import EventLog
from tests.expected_rows import expected_row

F = descriptor_pb2.FieldDescriptorProto
TOPIC = "events"
STUDIO_ID, CLASH_ID = 7, 8
AT = dt.datetime(2026, 3, 1, 12, 0, tzinfo=dt.UTC)


def _field(message: descriptor_pb2.DescriptorProto, name: str, number: int, kind: int, type_name: str = ""):
    added = message.field.add(name=name, number=number, type=kind, label=F.LABEL_OPTIONAL)
    if type_name:
        added.type_name = type_name


def _studio_file() -> descriptor_pb2.FileDescriptorProto:
    """studio.Match [0], studio.Purchase [1] and studio.Purchase.Refund [1, 0], numbered on their own."""
    file = descriptor_pb2.FileDescriptorProto(name="studio/events.proto", package="studio", syntax="proto3")
    file.dependency.append("google/protobuf/timestamp.proto")
    match = file.message_type.add(name="Match")
    _field(match, "event_id", 1, F.TYPE_STRING)
    _field(match, "event_timestamp", 2, F.TYPE_MESSAGE, ".google.protobuf.Timestamp")
    _field(match, "score", 3, F.TYPE_INT64)
    purchase = file.message_type.add(name="Purchase")
    _field(purchase, "purchase_id", 1, F.TYPE_STRING)  # #1 is event_id in Match: numbers are per type
    _field(purchase, "gamer_id", 2, F.TYPE_STRING)
    _field(purchase, "price", 3, F.TYPE_DOUBLE)
    _field(purchase, "event_timestamp", 4, F.TYPE_MESSAGE, ".google.protobuf.Timestamp")  # #2 in Match
    refund = purchase.nested_type.add(name="Refund")
    _field(refund, "refund_id", 1, F.TYPE_STRING)
    _field(refund, "price", 2, F.TYPE_DOUBLE)
    return file


def _clash_file() -> descriptor_pb2.FileDescriptorProto:
    """studio.Bonus: a ``score`` that is text, where studio.Match's is int64."""
    file = descriptor_pb2.FileDescriptorProto(name="studio/bonus.proto", package="studio", syntax="proto3")
    bonus = file.message_type.add(name="Bonus")
    _field(bonus, "bonus_id", 1, F.TYPE_STRING)
    _field(bonus, "score", 2, F.TYPE_STRING)
    return file


class _Registry:
    """The registry's answers, built by the registry client's own code: the studio's files under
    their ids, and the demo's GameEvent schema versions as ids 1..4."""

    def __init__(self) -> None:
        self.schemas: dict[int, RegistrySchema] = {
            STUDIO_ID: build_schema(STUDIO_ID, _studio_file()),
            CLASH_ID: build_schema(CLASH_ID, _clash_file()),
        }

    def schema(self, schema_id: int) -> RegistrySchema:
        if schema_id not in self.schemas:
            self.schemas[schema_id] = build_schema(schema_id, load_version(schema_id).file_descriptor_proto)
        return self.schemas[schema_id]

    def message_class(self, schema_id: int, indexes: tuple[int, ...]) -> type[ProtoMessage]:
        return message_factory.GetMessageClass(self.schemas[schema_id].message(indexes))


REGISTRY = _Registry()
MATCH = REGISTRY.message_class(STUDIO_ID, (0,))
PURCHASE = REGISTRY.message_class(STUDIO_ID, (1,))
REFUND = REGISTRY.message_class(STUDIO_ID, (1, 0))
BONUS = REGISTRY.message_class(CLASH_ID, (0,))
INDEXES = {"studio.Match": (0,), "studio.Purchase": (1,), "studio.Purchase.Refund": (1, 0)}


def _record(offset: int, schema_id: int, event: ProtoMessage, indexes: tuple[int, ...] = (0,)) -> Message:
    value = wire.frame(schema_id, event.SerializeToString(), indexes)
    return Message(
        topic=TOPIC, partition=0, offset=offset, key=b"k", value=value, timestamp=(1, 1_700_000_000_000)
    )


def _mixed_events() -> list[ProtoMessage]:
    """Mostly the file's second type, some of the first and of the nested one; some fields unset."""
    events: list[ProtoMessage] = []
    for i in range(12):
        purchase = PURCHASE(purchase_id=f"p-{i}", gamer_id=f"g-{i % 3}", price=0.5 * i)
        if i % 4:
            purchase.event_timestamp.FromDatetime(AT + dt.timedelta(seconds=i))
        events.append(purchase)
        if i % 3 == 0:
            match = MATCH(event_id=f"m-{i}", score=10 * i)
            match.event_timestamp.FromDatetime(AT - dt.timedelta(minutes=i))
            events.append(match)
        if i % 5 == 0:
            events.append(REFUND(refund_id=f"r-{i}", price=-0.5 * i))
    return events


def _assert_landed_as_sent(rows: list[dict], sent: dict[int, ProtoMessage]) -> None:
    proto_columns = [c for c in rows[0] if not c.startswith("_") and c != "event_date"]
    assert sorted(r["_kafka_offset"] for r in rows) == sorted(sent)
    for row in rows:
        want = expected_row(sent[row["_kafka_offset"]], proto_columns)
        assert {k: row[k] for k in want} == want, row["_kafka_offset"]


def test_the_second_type_of_a_file_and_a_nested_type_land_with_their_type_and_values():
    events = _mixed_events()
    sent = dict(enumerate(events))
    records = [_record(o, STUDIO_ID, e, INDEXES[e.DESCRIPTOR.full_name]) for o, e in sent.items()]
    decoded = Decoder(REGISTRY, 0, 0.0).decode(records, KnownColumns())  # type: ignore[arg-type]
    assert decoded.dead_letters == []
    rows = decoded.table.to_pylist()
    _assert_landed_as_sent(rows, sent)
    types = {r["_message_type"] for r in rows}
    assert types == {"studio.Match", "studio.Purchase", "studio.Purchase.Refund"}
    assert decoded.table.schema.field("_message_type").type == pa.string()
    assert decoded.field_numbers == {
        "studio.Match": {"event_id": 1, "event_timestamp": 2, "score": 3},
        "studio.Purchase": {"purchase_id": 1, "gamer_id": 2, "price": 3, "event_timestamp": 4},
        "studio.Purchase.Refund": {"refund_id": 1, "price": 2},
    }


def _settings(tmp_path) -> IngestSettings:
    return IngestSettings(warehouse_dir=tmp_path, topics=[TOPIC], metrics_port=0)


def _lander(tmp_path) -> tuple[Lander, PartitionOwnership, BronzeWriter]:
    s = _settings(tmp_path)
    writer = BronzeWriter(s.bronze_path, s.app_id)
    dead_letters = DeltaDeadLetters(s.dead_letters_path, s.app_id)
    decoder = Decoder(REGISTRY, 0, 0.0)  # type: ignore[arg-type]
    lander = Lander(s, writer, decoder, dead_letters, EventLog(s.event_log_path, "test"), "test")
    ownership = PartitionOwnership(writer)
    ownership.take([KafkaTopicPartition(TOPIC, 0)])
    return lander, ownership, writer


def _land(lander: Lander, ownership: PartitionOwnership, batch_id: str, records: list[Message]) -> None:
    landed = lander.land(batch_id, records, ownership, last_poll=time.monotonic())
    ownership.advance(landed.landings)


def test_types_that_number_their_fields_alike_share_bronze_and_keep_their_own_numbers(tmp_path):
    lander, ownership, writer = _lander(tmp_path)
    events = _mixed_events()
    sent = dict(enumerate(events))
    records = [_record(o, STUDIO_ID, e, INDEXES[e.DESCRIPTOR.full_name]) for o, e in sent.items()]
    _land(lander, ownership, "b1", records[:10])
    _land(lander, ownership, "b2", records[10:])  # the types are known now: checked, not refused

    rows = DeltaTable(str(tmp_path / "bronze" / "game_events")).to_pyarrow_table().to_pylist()
    _assert_landed_as_sent(rows, sent)
    assert DeltaTable(str(tmp_path / "bronze" / "dead_letters")).to_pyarrow_table().num_rows == 0
    numbers = writer.columns().numbers
    assert numbers["studio.Match"]["event_timestamp"] == 2
    assert numbers["studio.Purchase"]["event_timestamp"] == 4


def test_two_types_with_one_field_name_of_two_types_dead_letter_the_later_at_the_guard(tmp_path):
    lander, ownership, _writer = _lander(tmp_path)
    _land(lander, ownership, "b1", [_record(0, STUDIO_ID, MATCH(event_id="m", score=3))])
    clash = [_record(1, CLASH_ID, BONUS(bonus_id="b", score="high")), _record(2, STUDIO_ID, MATCH(score=4))]
    _land(lander, ownership, "b2", clash)  # no exception: one dead letter, one row

    bronze = DeltaTable(str(tmp_path / "bronze" / "game_events")).to_pyarrow_table()
    assert sorted(bronze.column("score").to_pylist()) == [3, 4] and "bonus_id" not in bronze.column_names
    letters = DeltaTable(str(tmp_path / "bronze" / "dead_letters")).to_pyarrow_table().to_pylist()
    assert [(r["_kafka_offset"], r["stage"], r["schema_id"]) for r in letters] == [
        (1, "schema_guard", CLASH_ID)
    ]
    assert (
        "field 'score' of studio.Bonus is string, but bronze's column 'score' is int64" in letters[0]["error"]
    )
    assert "(from studio.Match)" in letters[0]["error"] and "events[0]@1" in letters[0]["error"]


def test_the_clash_is_refused_within_one_batch_too_and_the_first_type_lands():
    records = [_record(0, STUDIO_ID, MATCH(event_id="m", score=3)), _record(1, CLASH_ID, BONUS(score="x"))]
    decoded = Decoder(REGISTRY, 0, 0.0).decode(records, KnownColumns())  # type: ignore[arg-type]
    assert decoded.table["_kafka_offset"].to_pylist() == [0]
    assert [(d.record.offset(), d.error.stage) for d in decoded.dead_letters] == [(1, "schema_guard")]
    assert "schema id 8 (studio.Bonus) refused by the schema guard" in str(decoded.dead_letters[0].error)


def test_a_renamed_or_renumbered_field_is_still_refused_within_its_own_type(tmp_path):
    lander, ownership, _writer = _lander(tmp_path)
    _land(lander, ownership, "b1", [_record(0, STUDIO_ID, MATCH(event_id="m", score=3))])
    renamed = _studio_file()
    renamed.message_type[0].field[2].name = "points"  # score #3 -> points #3
    renumbered = _studio_file()
    renumbered.message_type[0].field[2].number = 9  # score #3 -> score #9
    REGISTRY.schemas[21], REGISTRY.schemas[22] = build_schema(21, renamed), build_schema(22, renumbered)
    records = [
        _record(1, 21, REGISTRY.message_class(21, (0,))(points=5)),
        _record(2, 22, REGISTRY.message_class(22, (0,))(score=6)),
    ]
    _land(lander, ownership, "b2", records)
    letters = DeltaTable(str(tmp_path / "bronze" / "dead_letters")).to_pyarrow_table().to_pylist()
    errors = {r["_kafka_offset"]: r["error"] for r in letters}
    assert "field number #3 is reused: bronze has it as 'score', now 'points'" in errors[1]
    assert "field 'score' was #3 in bronze, the schema numbers it #9" in errors[2]


def _old_bronze(path) -> None:
    """A bronze as the ingest wrote it before ``_message_type``: v2 columns with their numbers in field
    metadata, the Kafka columns of then, three rows."""
    v2 = load_version(2).message_class.DESCRIPTOR
    proto = [
        pa.field(c.name, c.arrow_type, metadata={"gamelake.proto.field_number": str(c.number)})
        for c in map(field_column, v2.fields)
    ]
    kafka = [f for f in KAFKA_COLUMNS if f.name != "_message_type"]
    schema = pa.schema([*proto, *kafka, pa.field("event_date", pa.date32())])
    n = 3
    stamp = pa.array([AT] * n, pa.timestamp("us", tz="UTC"))
    values = {
        "event_id": pa.array([f"old-{i}" for i in range(n)]),
        "score": pa.array(list(range(n)), pa.int64()),
        "_kafka_topic": pa.array([TOPIC] * n),
        "_kafka_partition": pa.array([0] * n, pa.int32()),
        "_kafka_offset": pa.array(list(range(n)), pa.int64()),
        "_kafka_timestamp": stamp,
        "_schema_id": pa.array([2] * n, pa.int32()),
        "_ingested_at": stamp,
        "event_date": pa.array([AT.date()] * n, pa.date32()),
    }
    rows = pa.table({f.name: values.get(f.name, pa.nulls(n, f.type)) for f in schema}, schema=schema)
    write_deltalake(
        str(path), rows, partition_by=["event_date"], configuration={"delta.enableChangeDataFeed": "true"}
    )
    # As `ingest bronze migrate-native-types` leaves it: its scalar columns had nothing to convert.
    DeltaTable(str(path)).alter.set_table_properties(TYPED_COLUMNS, raise_if_not_exists=False)


def test_a_bronze_from_before_message_types_gets_the_column_live_and_old_rows_read_null(tmp_path):
    bronze = tmp_path / "bronze" / "game_events"
    _old_bronze(bronze)
    assert "_message_type" not in DeltaTable(str(bronze)).schema().to_arrow().names

    lander, ownership, _writer = _lander(tmp_path)
    v2 = load_version(2).message_class
    new = [_record(o, 2, v2(event_id=f"new-{o}", score=o)) for o in range(3, 6)]
    new += [_record(6, STUDIO_ID, PURCHASE(purchase_id="p", price=1.5), (1,))]  # #1: event_id's in v2
    _land(lander, ownership, "b1", new)

    table = DeltaTable(str(bronze)).to_pyarrow_table()
    assert table.schema.field("_message_type").type == pa.string()
    got = {r["_kafka_offset"]: (r["event_id"], r["score"], r["_message_type"]) for r in table.to_pylist()}
    assert got == {
        0: ("old-0", 0, None),
        1: ("old-1", 1, None),
        2: ("old-2", 2, None),
        3: ("new-3", 3, MESSAGE_NAME),
        4: ("new-4", 4, MESSAGE_NAME),
        5: ("new-5", 5, MESSAGE_NAME),
        6: (None, None, "studio.Purchase"),
    }
    assert DeltaTable(str(tmp_path / "bronze" / "dead_letters")).to_pyarrow_table().num_rows == 0
