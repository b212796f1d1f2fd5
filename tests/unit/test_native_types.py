"""Native types: the studio schema's every shape decodes to structs, arrays, maps and scalars,
keeps presence, widens structs live, and lands in (and reads back from) a real Delta table.

The registry is replaced at its HTTP boundary only (a built schema per id); the decoder, the guard
and the writer are the service's own. tests/integration/test_ingest_native_types.py runs the same
schema through the real Kafka and registry.
"""

from __future__ import annotations

import json
from pathlib import Path

import pyarrow as pa
import pyarrow.dataset as ds
import pytest
from confluent_kafka import Message
from deltalake import DeltaTable
from gamelake_dev.studio_schema import comparable, expected, matches, studio_schema
from google.protobuf import descriptor_pool

from ingest.landing.decode import wire_format
from ingest.landing.decode.decoder import Decoder
from ingest.landing.decode.schema_guard import KnownColumns
from ingest.landing.decode.schema_registry import build_schema
from ingest.landing.delta.bronze_writer import BronzeWriter


class _Registry:
    """Schema id N is the studio schema's version N, built as the registry client builds it."""

    def schema(self, schema_id: int):
        studio = studio_schema(schema_id)
        pool = descriptor_pool.DescriptorPool()
        common = build_schema(0, studio.common, pool)
        return build_schema(schema_id, studio.match, pool, [common.file])


def _records(version: int, messages, first_offset: int = 0) -> list[Message]:
    return [
        Message(
            topic="studio",
            partition=0,
            offset=first_offset + i,
            key=None,
            value=wire_format.frame(version, m.SerializeToString()),
            timestamp=(1, 1_700_000_000_000),
        )
        for i, m in enumerate(messages)
    ]


def _decoded(version: int, messages, guard: KnownColumns | None = None):
    decoded = Decoder(_Registry(), 0, 0.0).decode(_records(version, messages), guard or KnownColumns())
    assert not decoded.dead_letters, [str(d.error) for d in decoded.dead_letters]
    return decoded


def test_every_shape_lands_as_its_native_type_with_presence_kept() -> None:
    sent = matches(1, 60, seed=1)
    table = _decoded(1, sent).table
    assert table is not None
    types = {f.name: f.type for f in table.schema}
    assert types["loadout"] == pa.struct(
        [
            ("weapon", pa.string()),
            ("level", pa.int32()),
            ("perks", pa.list_(pa.field("element", pa.string()))),
        ]
    )
    assert types["scores"] == pa.list_(pa.field("element", pa.int64()))
    assert types["stats"] == pa.map_(pa.string(), pa.int64())
    assert types["wallet"].item_type == pa.struct(
        [("currency", pa.string()), ("amount", pa.decimal128(20, 0))]
    )
    assert types["outcome"] == pa.string() and types["rank"] == pa.int32()
    assert types["replay"] == pa.binary() and types["big_counter"] == pa.decimal128(20, 0)
    assert types["played"] == pa.int64() and types["bonus"] == pa.int64() and types["nickname"] == pa.string()
    assert types["extra"] == pa.string()
    for row, message in zip(table.to_pylist(), sent, strict=True):
        assert comparable(row) == expected(message), message.event_id


def test_unset_fields_with_presence_are_null_and_empty_repeated_fields_are_empty() -> None:
    row = _decoded(1, matches(1, 1)).table.to_pylist()[0]  # match 0 has every field unset
    for name in ("loadout", "winner", "draw_round", "outcome", "rank", "played", "bonus", "nickname", "tree"):
        assert row[name] is None, name
    assert row["scores"] == [] and row["rewards"] == [] and row["stats"] == [] and row["wallet"] == []
    assert row["replay"] == b"" and row["rarity"] == "RARITY_UNSPECIFIED"  # no presence in proto3


def test_a_recursive_message_nests_three_levels_then_lands_as_json_text() -> None:
    match = studio_schema(1).match_class(event_id="deep")
    node = match.tree
    for level in range(6):
        node.label = f"level-{level}"
        node = node.child
    tree = _decoded(1, [match]).table.to_pylist()[0]["tree"]
    assert tree["label"] == "level-0" and tree["child"]["child"]["label"] == "level-2"
    json_text = '{"child": {"child": {"label": "level-5"}, "label": "level-4"}, "label": "level-3"}'
    assert tree["child"]["child"]["child"] == json_text


def test_a_field_added_inside_a_nested_message_widens_the_struct_and_old_rows_read_null(
    tmp_path: Path,
) -> None:
    writer = BronzeWriter(tmp_path / "bronze", "app")
    first = _decoded(1, matches(1, 9, seed=2), writer.columns())
    _land(writer, first)

    guard = writer.columns()
    second = _decoded(2, matches(2, 9, seed=3), guard)
    [widened] = second.new_columns
    assert widened.name == "loadout" and widened.type.get_field_index("skin") == 3
    _land(writer, second)

    rows = {r["event_id"]: r for r in DeltaTable(str(tmp_path / "bronze")).to_pyarrow_table().to_pylist()}
    for m in matches(1, 9, seed=2):
        want = expected(m)
        if want["loadout"] is not None:
            want["loadout"]["skin"] = None  # the struct widened after these rows landed
        assert comparable(rows[m.event_id]) == want
    for m in matches(2, 9, seed=3):
        assert comparable(rows[m.event_id]) == expected(m)


def test_the_guard_refuses_a_type_change_and_a_renumber_inside_a_nested_message() -> None:
    guard = KnownColumns()
    plan = Decoder(_Registry(), 0, 0.0).plan(1, (0,))
    guard.accept(plan.message_type, plan.columns, plan.nested_types())
    loadout = next(c for c in plan.columns if c.name == "loadout")

    changed = pa.struct([("weapon", pa.int64()), ("level", pa.int32())])
    clash = guard.violations(plan.message_type, [_column_of_type(loadout, changed)], {})
    assert clash and "'loadout.weapon' changed type inside column 'loadout'" in clash[0]
    assert "bronze has string, the schema has int64" in clash[0]

    renumbered = {"studio.Match.Loadout": {"weapon": 1, "level": 7}}
    problems = guard.violations(plan.message_type, [], renumbered)
    assert problems == ["field 'level' of studio.Match.Loadout was #2 in bronze, the schema numbers it #7"]


def _column_of_type(column, arrow_type: pa.DataType):
    class Retyped:
        name, number = column.name, column.number

    Retyped.arrow_type = arrow_type  # type: ignore[attr-defined]
    return Retyped()


def test_statistics_nest_inside_structs_and_filters_on_nested_strings_read_right(tmp_path: Path) -> None:
    writer = BronzeWriter(tmp_path / "bronze", "app")
    sent = matches(1, 30, seed=4)
    _land(writer, _decoded(1, sent, writer.columns()))
    table = DeltaTable(str(tmp_path / "bronze"))
    files = [
        json.loads(json.loads(line)["add"]["stats"])
        for log in sorted((tmp_path / "bronze" / "_delta_log").glob("*.json"))
        for line in log.read_text().splitlines()
        if '"add"' in line
    ]
    weapons = [m.loadout.weapon for m in sent if m.HasField("loadout")]
    assert min(f["minValues"]["loadout"]["weapon"] for f in files if "loadout" in f["minValues"]) == min(
        weapons
    )
    assert sum(f["nullCount"]["loadout"]["weapon"] for f in files) == len(sent) - len(weapons)
    assert all(f["nullCount"]["scores"] == 0 and "scores" not in f["minValues"] for f in files)
    dataset = table.to_pyarrow_dataset()
    found = dataset.to_table(filter=ds.field("loadout", "weapon") == "bow").column("event_id").to_pylist()
    assert sorted(found) == sorted(
        m.event_id for m in sent if m.HasField("loadout") and m.loadout.weapon == "bow"
    )


def _land(writer: BronzeWriter, decoded) -> None:
    writer.evolve(decoded.new_columns, decoded.field_numbers)
    writer.commit(writer.write_files(decoded.table), {}, {})


@pytest.mark.parametrize("version", [1, 2])
def test_nested_types_numbers_are_recorded_per_message_type(version: int) -> None:
    decoded = _decoded(version, matches(version, 3))
    numbers = decoded.field_numbers
    assert numbers["studio.Match.Loadout"]["perks"] == 3
    assert numbers["studio.Money"] == {"currency": 1, "amount": 2}
    assert numbers["studio.Node"] == {"label": 1, "child": 2}
    assert "outcome" not in numbers["studio.Match"], "a oneof's case column has no field number"
    assert ("skin" in numbers["studio.Match.Loadout"]) == (version == 2)


def write_studio_bronze(path: Path, count: int = 40) -> list:
    """A bronze of ``count`` studio matches, written by the service's decoder and writer."""
    writer = BronzeWriter(path, "app")
    sent = matches(1, count, seed=5)
    _land(writer, _decoded(1, sent, writer.columns()))
    return sent


@pytest.mark.parametrize(
    "content",
    [{}, {"a": 3, "b": "x"}, {"n": None, "t": True, "l": [1.5, "s", None, False, {"deep": [[], {}]}]}],
)
def test_struct_json_is_what_message_to_dict_renders(content) -> None:
    from google.protobuf import json_format, struct_pb2

    from ingest.landing.decode.proto_arrow import _list_json, _struct_json, _value_json

    struct = struct_pb2.Struct()
    struct.update(content)
    assert _struct_json(struct) == json_format.MessageToDict(struct)
    listed = struct_pb2.ListValue()
    listed.extend([content, 1, "x"])
    assert _list_json(listed) == json_format.MessageToDict(listed)
    value = struct_pb2.Value(struct_value=struct)
    assert _value_json(value) == json_format.MessageToDict(value)
