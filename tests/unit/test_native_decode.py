"""The native path (ptars) gives the same bronze columns as the upb path, on every schema shape.

Each case decodes the same payloads both ways: ``NativeReader.columns`` against the upb parse
and the Python converters (``Plan.columns_of``), which the rest of the suite holds to expected
values field by field (dev/gamelake_dev/studio_schema.py). Map entries are compared as sets: the upb path
gives them in its hash order, the native path in the order of the wire.
"""

from __future__ import annotations

from typing import Any

import pyarrow as pa
import pytest
from gamelake_dev.demo_schemas import load_version
from gamelake_dev.producer.datagen import EventGenerator
from gamelake_dev.studio_schema import matches, studio_schema
from google.protobuf import descriptor_pb2, message_factory
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from ingest.landing.decode import wire_format
from ingest.landing.decode.decoder import Decoder, Plan
from ingest.landing.decode.schema_guard import KnownColumns
from ingest.landing.decode.schema_registry import build_schema
from tests.random_schemas import fill, schemas


class _Registry:
    def __init__(self, built) -> None:
        self.built = built

    def schema(self, schema_id):
        return self.built


def _plan(built, indexes=(0,)) -> Plan:
    return Decoder(_Registry(built), 0, 0.0).plan(1, indexes)


def _studio(version: int):
    from google.protobuf import descriptor_pool

    schema = studio_schema(version)
    pool = descriptor_pool.DescriptorPool()
    common = build_schema(0, schema.common, pool)
    return build_schema(1, schema.match, pool, [common.file])


def _comparable(value: Any) -> Any:
    if isinstance(value, list):
        items = [_comparable(v) for v in value]
        if items and all(isinstance(v, tuple) for v in items):  # a map's entries
            return sorted(items, key=repr)
        return items
    if isinstance(value, tuple):
        return tuple(_comparable(v) for v in value)
    if isinstance(value, dict):
        return {k: _comparable(v) for k, v in value.items()}
    return value


def assert_same_columns(plan: Plan, payloads: list[bytes]) -> None:
    assert plan.native is not None, "the plan has a native reader"
    native = plan.native.columns(payloads)
    messages, _, bad = plan.parse(payloads)
    assert not bad
    upb = plan.columns_of(messages)
    assert list(native) == list(upb)
    for name, expected in upb.items():
        got = native[name]
        assert got.type == expected.type, name
        assert _comparable(got.to_pylist()) == _comparable(expected.to_pylist()), name


@pytest.mark.parametrize("version", [1, 2])
def test_studio_matches_read_natively_equal_the_upb_path(version):
    payloads = [m.SerializeToString() for m in matches(version, 600, seed=version)]
    assert_same_columns(_plan(_studio(version)), payloads)


@pytest.mark.parametrize("version", [1, 2, 3, 4])
def test_demo_events_read_natively_equal_the_upb_path(version):
    schema = load_version(version)
    events = EventGenerator(["space_raiders", "kart_legends"], [version], seed=version).events(300)
    payloads = [schema.message_class(**e.fields(schema.field_names)).SerializeToString() for e in events]
    assert_same_columns(_plan(build_schema(1, schema.file_descriptor_proto)), payloads)


def test_a_recursive_type_nests_to_the_limit_natively_and_lands_as_json_text_past_it():
    plan = _plan(_studio(1))
    deep = studio_schema(1).match_class(event_id="deep")
    node = deep.tree
    for level in range(6):
        node.label = f"level-{level}"
        node = node.child
    [tree] = plan.native.columns([deep.SerializeToString()])["tree"].to_pylist()
    assert tree["child"]["child"]["label"] == "level-2"
    assert tree["child"]["child"]["child"] == (
        '{"child": {"child": {"label": "level-5"}, "label": "level-4"}, "label": "level-3"}'
    )


@settings(max_examples=80, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(file=schemas(), data=st.data())
def test_random_schemas_with_random_values_read_natively_equal_the_upb_path(file, data):
    built = build_schema(1, file)
    message_class = message_factory.GetMessageClass(built.pool.FindMessageTypeByName("rnd.Event"))
    payloads = []
    for _ in range(data.draw(st.integers(1, 6))):
        message = message_class()
        fill(data.draw, message)
        payloads.append(message.SerializeToString())
    assert_same_columns(_plan(built), payloads)


@settings(max_examples=80, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(file=schemas(), payloads=st.lists(st.binary(max_size=24), min_size=1, max_size=6))
def test_random_bytes_upb_accepts_read_natively_as_on_the_upb_path_or_are_refused(file, payloads):
    plan = _plan(build_schema(1, file))
    _, good, _ = plan.parse(payloads)
    valid = [payloads[i] for i in good]  # the decoder reads columns of what upb parsed, only
    if not valid or plan.native_columns(valid) is None:
        return  # refused: the decoder reads these on the upb path
    assert_same_columns(plan, valid)


def _group_schema() -> descriptor_pb2.FileDescriptorProto:
    F = descriptor_pb2.FieldDescriptorProto
    file = descriptor_pb2.FileDescriptorProto(name="old/grouped.proto", package="old", syntax="proto2")
    message = file.message_type.add(name="Event")
    message.field.add(name="id", number=1, type=F.TYPE_STRING, label=F.LABEL_OPTIONAL)
    group = message.nested_type.add(name="Result")
    group.field.add(name="score", number=3, type=F.TYPE_INT32, label=F.LABEL_OPTIONAL)
    message.field.add(
        name="result", number=2, type=F.TYPE_GROUP, type_name=".old.Event.Result", label=F.LABEL_OPTIONAL
    )
    return file


def test_a_schema_the_landing_schema_cannot_mirror_lands_on_the_upb_path():
    built = build_schema(1, _group_schema())
    plan = _plan(built)
    assert plan.native is None
    event = plan.message_class(id="a")
    event.result.score = 5
    records = [_record(wire_format.frame(1, event.SerializeToString()))]
    decoded = Decoder(_Registry(built), 0, 0.0).decode(records, KnownColumns())
    assert decoded.table.column("result").to_pylist() == [{"score": 5}]


def test_a_group_with_a_bad_payload_lands_its_good_records_and_dead_letters_the_bad_one():
    schema = _studio(1)
    good = [m.SerializeToString() for m in matches(1, 3, seed=4)]
    values = [good[0], b"\x0a\x05ab", good[1], b"\x0a\x02\xff\xfe", good[2]]  # truncated, bad UTF-8
    records = [_record(wire_format.frame(1, v), offset) for offset, v in enumerate(values)]
    decoded = Decoder(_Registry(schema), 0, 0.0).decode(records, KnownColumns())
    assert decoded.table.column("_kafka_offset").to_pylist() == [0, 2, 4]
    assert [(d.record.offset(), d.error.stage) for d in decoded.dead_letters] == [
        (1, "decode"),
        (3, "decode"),
    ]


def _record(value: bytes, offset: int = 0):
    from confluent_kafka import Message

    return Message(
        topic="t", partition=0, offset=offset, key=None, value=value, timestamp=(1, 1_700_000_000_000)
    )


def test_the_native_path_lands_a_batch_in_one_table_with_bronze_types():
    schema = _studio(1)
    payloads = [m.SerializeToString() for m in matches(1, 30, seed=5)]
    records = [_record(wire_format.frame(1, p), i) for i, p in enumerate(payloads)]
    decoded = Decoder(_Registry(schema), 0, 0.0).decode(records, KnownColumns())
    plan = _plan(schema)
    assert decoded.table.num_rows == 30 and not decoded.dead_letters
    for column in plan.columns:
        assert decoded.table.schema.field(column.name).type == column.arrow_type
    assert decoded.table.column("big_counter").type == pa.decimal128(20, 0)


def _proto2_schema(with_enum: bool) -> descriptor_pb2.FileDescriptorProto:
    F = descriptor_pb2.FieldDescriptorProto
    file = descriptor_pb2.FileDescriptorProto(name="old/p2.proto", package="p2", syntax="proto2")
    message = file.message_type.add(name="Event")
    message.field.add(name="count", number=1, type=F.TYPE_INT32, label=F.LABEL_OPTIONAL, default_value="5")
    message.field.add(name="name", number=2, type=F.TYPE_STRING, label=F.LABEL_OPTIONAL)
    message.field.add(name="tags", number=3, type=F.TYPE_INT64, label=F.LABEL_REPEATED)
    if with_enum:
        enum = file.enum_type.add(name="Kind")
        enum.value.add(name="A", number=0)
        message.field.add(
            name="kind", number=4, type=F.TYPE_ENUM, type_name=".p2.Kind", label=F.LABEL_OPTIONAL
        )
    return file


def test_a_map_of_a_closed_enum_lands_on_the_upb_path_which_leaves_an_unnamed_entry_out():
    file = _proto2_schema(with_enum=True)
    F = descriptor_pb2.FieldDescriptorProto
    message = file.message_type[0]
    message.field.pop()  # the plain enum field: only the map's values are enums here
    entry = message.nested_type.add(name="KindsEntry")
    entry.options.map_entry = True
    entry.field.add(name="key", number=1, type=F.TYPE_STRING, label=F.LABEL_OPTIONAL)
    entry.field.add(name="value", number=2, type=F.TYPE_ENUM, type_name=".p2.Kind", label=F.LABEL_OPTIONAL)
    message.field.add(
        name="kinds", number=5, type=F.TYPE_MESSAGE, type_name=".p2.Event.KindsEntry", label=F.LABEL_REPEATED
    )
    built = build_schema(1, file)
    assert _plan(built).native is None
    payload = b"\x2a\x05\x0a\x01a\x10\x00" + b"\x2a\x05\x0a\x01b\x10\x07"  # a: A, b: unnamed 7
    record = _record(wire_format.frame(1, payload))
    decoded = Decoder(_Registry(built), 0, 0.0).decode([record], KnownColumns())
    assert decoded.table.column("kinds").to_pylist() == [[("a", "A")]]


def test_proto2_fields_keep_presence_natively_as_on_the_upb_path():
    payloads = [b"", b"\x08\x00", b"\x08\x07\x12\x00", b"\x12\x02ok\x18\x01\x18\x02"]
    assert_same_columns(_plan(build_schema(1, _proto2_schema(with_enum=False))), payloads)


def test_a_closed_proto2_enum_lands_on_the_upb_path_which_leaves_an_unnamed_number_unset():
    built = build_schema(1, _proto2_schema(with_enum=True))
    plan = _plan(built)
    assert plan.native is None
    decoded = Decoder(_Registry(built), 0, 0.0).decode(
        [_record(wire_format.frame(1, b"\x20\x07"))], KnownColumns()
    )
    assert decoded.table.column("kind").to_pylist() == [None]


def _match(**fields):
    return studio_schema(1).match_class(**fields)


def test_concatenated_messages_merge_natively_as_upb_merges_them():
    first, second = _match(event_id="a"), _match()
    first.loadout.weapon, second.loadout.level = "axe", 3
    first.stats["k"], second.stats["j"] = 1, 2
    first.extra.update({"p": 1})
    second.extra.update({"q": 2})
    first.tree.child.child.child.label, second.tree.child.child.child.child.label = "x", "y"
    assert_same_columns(_plan(_studio(1)), [first.SerializeToString() + second.SerializeToString()])


@pytest.mark.parametrize(
    "second",
    [
        pytest.param(lambda m: m.stats.__setitem__("k", 2), id="a map key twice"),
        pytest.param(lambda m: setattr(m, "draw_round", 4), id="two members of a oneof"),
    ],
)
def test_concatenated_messages_the_arrays_cannot_order_go_to_the_upb_path_where_the_last_wins(second):
    first, later = _match(event_id="a", winner="x"), _match()
    first.stats["k"] = 1
    second(later)
    payload = first.SerializeToString() + later.SerializeToString()
    schema = _studio(1)
    plan = _plan(schema)
    assert plan.native_columns([payload]) is None
    decoded = Decoder(_Registry(schema), 0, 0.0).decode(
        [_record(wire_format.frame(1, payload))], KnownColumns()
    )
    upb = plan.columns_of(plan.parse([payload])[0])
    for name in ("stats", "outcome", "winner", "draw_round"):
        assert decoded.table.column(name).to_pylist() == upb[name].to_pylist(), name


def test_the_decoder_counts_the_records_each_path_read():
    from ingest.core.metrics import prometheus as metrics
    from ingest.landing.decode.native_reader import RUST_RENDERER

    # The studio schema has JSON-text columns: without the Rust renderer, Python renders them.
    native = "native" if RUST_RENDERER is not None else "native_python_json"

    def counts():
        return {p: metrics.DECODE_PATH.labels(p)._value.get() for p in (native, "upb")}

    before = counts()
    studio = _studio(1)
    payloads = [m.SerializeToString() for m in matches(1, 5, seed=6)]
    Decoder(_Registry(studio), 0, 0.0).decode(
        [_record(wire_format.frame(1, p), i) for i, p in enumerate(payloads)], KnownColumns()
    )
    grouped = build_schema(1, _group_schema())
    Decoder(_Registry(grouped), 0, 0.0).decode([_record(wire_format.frame(1, b"\x0a\x01a"))], KnownColumns())
    after = counts()
    assert (after[native] - before[native], after["upb"] - before["upb"]) == (5, 1)
