"""The columnar decoder and the framing fast path, against simple one-record-at-a-time references."""

from __future__ import annotations

import random
from datetime import UTC, datetime, timedelta

import pyarrow as pa
import pytest
from confluent_kafka import Message
from gamelake_dev.demo_schemas import available_versions, load_version
from google.protobuf.descriptor import FieldDescriptor

from ingest.core.errors import FramingError
from ingest.landing.decode import wire_format as wire
from ingest.landing.decode.bronze_columns import field_column
from ingest.landing.decode.decoder import Decoder
from ingest.landing.decode.schema_guard import KnownColumns
from ingest.landing.records import TopicPartition
from ingest.landing.service.batch import partition_ranges
from tests.demo_registry import DemoRegistry

EPOCH = datetime(1970, 1, 1, tzinfo=UTC)


_Registry = DemoRegistry


def _random_text(rng: random.Random) -> str:
    return "".join(rng.choice("abcxyz-_ é😀ß0") for _ in range(rng.randint(0, 12)))


def _random_message(rng: random.Random, version: int):
    message = load_version(version).message_class()
    for f in message.DESCRIPTOR.fields:
        if f.type == FieldDescriptor.TYPE_MESSAGE:  # Timestamp: unset, set to zero, or any instant
            choice = rng.random()
            if choice < 0.25:
                continue
            stamp = getattr(message, f.name)
            stamp.seconds = 0 if choice < 0.5 else rng.randint(-(10**9), 4 * 10**9)
            stamp.nanos = 0 if choice < 0.5 else rng.randint(0, 999_999_999)
            stamp.SetInParent()
        elif f.type == FieldDescriptor.TYPE_STRING:
            setattr(message, f.name, _random_text(rng))
        elif f.type == FieldDescriptor.TYPE_BOOL:
            setattr(message, f.name, rng.random() < 0.5)
        elif f.type == FieldDescriptor.TYPE_DOUBLE:
            setattr(message, f.name, rng.choice([0.0, -1.5, rng.uniform(-1e6, 1e6)]))
        elif f.type == FieldDescriptor.TYPE_INT32:
            setattr(message, f.name, rng.randint(-(2**31), 2**31 - 1))
        elif f.type == FieldDescriptor.TYPE_INT64:
            setattr(message, f.name, rng.randint(-(2**63), 2**63 - 1))
        else:
            raise AssertionError(f"the test has no generator for {f.name} ({f.type})")
    return message


def _reference_row(message, record: Message) -> dict:
    """What one record must land as, computed field by field without the columnar code."""
    row: dict = {}
    for f in message.DESCRIPTOR.fields:
        column = field_column(f)
        if column.kind == "timestamp":
            stamp = getattr(message, f.name)
            present = message.HasField(f.name)
            micros = stamp.seconds * 1_000_000 + int(stamp.nanos / 1000)
            row[f.name] = EPOCH + timedelta(microseconds=micros) if present else None
        else:
            assert column.kind == "scalar", column
            row[f.name] = getattr(message, f.name)
    kafka_time = EPOCH + timedelta(milliseconds=record.timestamp()[1])
    key = record.key()
    row.update(
        {
            "_kafka_topic": record.topic(),
            "_kafka_partition": record.partition(),
            "_kafka_offset": record.offset(),
            "_kafka_timestamp": kafka_time,
            "_kafka_key": key.decode("utf-8", "backslashreplace") if key is not None else None,
            "_schema_id": int.from_bytes(record.value()[1:5], "big"),
            "_message_type": "gamelake.events.GameEvent",
            "event_date": (row.get("event_timestamp") or kafka_time).date(),
        }
    )
    return row


def _record(value: bytes | None, offset: int, rng: random.Random) -> Message:
    key = rng.choice([None, b"gamer-1", "spieler-ü".encode(), b"\xff\xfe not utf-8"])
    millis = rng.randint(1_600_000_000_000, 1_900_000_000_000)
    return Message(
        topic="events", partition=offset % 3, offset=offset, key=key, value=value, timestamp=(1, millis)
    )


@pytest.mark.parametrize("seed", [1, 2, 3])
def test_a_mixed_batch_lands_exactly_like_the_one_record_reference(seed):
    rng = random.Random(seed)
    records, expected = [], {}
    for offset in range(400):
        version = rng.choice(available_versions())
        message = _random_message(rng, version)
        record = _record(wire.frame(version, message.SerializeToString()), offset, rng)
        records.append(record)
        expected[offset] = _reference_row(message, record)
    decoded = Decoder(_Registry(), 0, 0.0).decode(records, KnownColumns())
    assert decoded.dead_letters == []
    assert decoded.schema_ids == {int.from_bytes(r.value()[1:5], "big") for r in records}
    rows = decoded.table.drop_columns([]).to_pylist()
    assert sorted(r["_kafka_offset"] for r in rows) == list(range(400))
    for row in rows:
        want = expected[row["_kafka_offset"]]
        assert {k: v for k, v in row.items() if k in want} == want
        assert all(row[k] is None for k in row.keys() - want.keys())  # other versions' columns


def test_poison_records_become_dead_letters_and_the_rest_lands():
    rng = random.Random(7)
    good = _random_message(rng, 3).SerializeToString()
    values = {
        0: wire.frame(3, good),
        1: None,  # tombstone
        2: b"\x07garbage",  # foreign magic byte
        3: wire.frame(99, good),  # unknown schema id
        4: wire.frame(3, b"\xff\xff\xff"),  # invalid protobuf
        5: wire.frame(3, good, (0,))[:5] + b"\x02\x00" + good,  # [0] spelled out, not the shorthand
        6: wire.frame(3, good),
    }
    records = [_record(values[i], i, rng) for i in range(7)]
    decoded = Decoder(_Registry(), 0, 0.0).decode(records, KnownColumns())
    stages = {d.record.offset(): d.error.stage for d in decoded.dead_letters}
    assert stages == {1: "framing", 2: "framing", 3: "schema_lookup", 4: "decode"}
    assert decoded.table["_kafka_offset"].to_pylist() == [0, 5, 6]
    assert decoded.offsets["offset"].to_pylist() == list(range(7))


def _random_value(rng: random.Random) -> bytes | None:
    kind = rng.random()
    schema_id = rng.choice([1, 2, 3, 2**32 - 1])
    payload = rng.randbytes(rng.randint(0, 6))
    if kind < 0.5:
        return wire.frame(schema_id, payload)
    if kind < 0.8:
        indexes = tuple(rng.randint(0, 130) for _ in range(rng.randint(1, 3)))
        return wire.frame(schema_id, payload, indexes)
    if kind < 0.9:
        return None
    return rng.randbytes(rng.randint(0, 9))  # short, foreign or cut values


@pytest.mark.parametrize("seed", range(5))
def test_split_groups_exactly_as_parsing_every_value(seed):
    rng = random.Random(seed)
    values = [_random_value(rng) for _ in range(500)]
    expected_groups: dict[tuple[int, tuple[int, ...]], list[tuple[int, bytes]]] = {}
    expected_errors = {}
    for i, value in enumerate(values):
        try:
            frame = wire.parse(value)
        except FramingError as err:
            expected_errors[i] = str(err)
            continue
        key = (frame.schema_id, frame.message_indexes)
        expected_groups.setdefault(key, []).append((i, value[frame.payload_start :]))
    groups, errors = wire.split(values)
    assert {i: str(err) for i, err in errors} == expected_errors
    got = {(g.schema_id, g.message_indexes): list(zip(g.positions, g.payloads, strict=True)) for g in groups}
    assert got == expected_groups
    assert [g.positions[0] for g in groups] == sorted(g.positions[0] for g in groups)


def test_split_merges_both_spellings_of_the_first_message_in_batch_order():
    shorthand, spelled = wire.frame(5, b"a"), b"\x00\x00\x00\x00\x05\x02\x00b"
    groups, errors = wire.split([spelled, shorthand, spelled, shorthand])
    assert errors == []
    assert [(g.schema_id, g.message_indexes, g.positions, g.payloads) for g in groups] == [
        (5, (0,), [0, 1, 2, 3], [b"b", b"a", b"b", b"a"])
    ]


def test_an_empty_batch_decodes_to_nothing():
    decoded = Decoder(_Registry(), 0, 0.0).decode([], KnownColumns())
    assert decoded.table is None and decoded.dead_letters == []
    assert decoded.offsets is not None and decoded.offsets.num_rows == 0
    assert pa.types.is_int64(decoded.offsets.schema.field("offset").type)


def test_batch_ranges_count_every_record_and_its_dead_letters_per_partition():
    rng = random.Random(11)
    good = _random_message(rng, 2).SerializeToString()
    records = [
        _record(rng.choice([wire.frame(2, good), wire.frame(2, b"\xff\xff"), None]), offset, rng)
        for offset in range(10, 70)
    ]
    decoded = Decoder(_Registry(), 0, 0.0).decode(records, KnownColumns())
    expected: dict = {}
    for r in records:  # one record at a time, as the service used to
        tp = TopicPartition(r.topic(), r.partition())
        got = expected.setdefault(tp, {"first_offset": r.offset(), "rows": 0, "dead_letters": 0})
        got["last_offset"] = r.offset()
        got["rows" if r.value() == wire.frame(2, good) else "dead_letters"] += 1
    assert {tp: r.as_dict() for tp, r in partition_ranges(decoded).items()} == expected
    assert sum(r["dead_letters"] for r in expected.values()) == len(decoded.dead_letters) > 0
