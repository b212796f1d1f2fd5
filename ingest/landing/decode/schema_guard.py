"""The schema guard: a new schema may only add columns to bronze.

Bronze holds every message type of its topics in one table, so a column name is shared by every
type that has a field of that name, while field numbers belong to one message type. Bronze
remembers each column's type (its schema) and, per message type, the number of each of its
fields (a table property per type). A schema passes when each field of its message type

* is not named like one of the service's own columns (``_kafka_*``, ``event_date``...);
* has the type of the column of its name, if bronze has one, whichever message type added it;
* keeps the number its type had under that name, and takes no number its type had under
  another name (a rename or a reused number would silently split or mix a column).

Nested types follow the same rules inside their structs: a nested message type may add fields
(the struct widens live, ``widened``), a child keeps its type, and the numbers of every message
type nested in a column are recorded and checked like a top-level type's.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import pyarrow as pa

from ingest.landing.decode.bronze_columns import RESERVED_NAMES, FieldColumn, type_name
from ingest.landing.records import FieldNumbers


@dataclass(frozen=True)
class KnownColumn:
    name: str
    arrow_type: pa.DataType


@dataclass
class KnownColumns:
    """Columns and field numbers known to bronze, plus those accepted earlier in the same batch."""

    columns: dict[str, KnownColumn] = field(default_factory=dict)
    numbers: FieldNumbers = field(default_factory=dict)

    def __post_init__(self) -> None:
        self._recorded = {name: dict(fields) for name, fields in self.numbers.items()}

    def violations(
        self, message_type: str, fields: list[FieldColumn], nested: FieldNumbers | None = None
    ) -> list[str]:
        """Why ``fields`` of ``message_type`` cannot land in bronze; empty when they can.

        ``nested``: the field numbers of the message types nested in ``fields``' structs.
        """
        problems = []
        for f in fields:
            if f.name in RESERVED_NAMES:
                problems.append(
                    f"field {f.name!r} (#{f.number}) uses a name reserved for the service's columns"
                )
                continue
            known = self.columns.get(f.name)
            if known is not None:
                clash = type_clash(f.name, known.arrow_type, f.arrow_type)
                if clash is not None:
                    problems.append(self._type_clash(message_type, f, known, clash))
        numbered = {f.name: f.number for f in fields if f.number is not None}
        for type_name_, fields_numbers in {**(nested or {}), message_type: numbered}.items():
            where = "" if type_name_ == message_type else f" of {type_name_}"
            problems += self._number_problems(type_name_, fields_numbers, where)
        return problems

    def _number_problems(self, message_type: str, fields: dict[str, int], where: str) -> list[str]:
        problems = []
        numbers = self.numbers.get(message_type, {})
        names = {number: name for name, number in numbers.items()}
        for name, field_number in fields.items():
            f = _Numbered(name, field_number, where)
            number = numbers.get(f.name)
            if number is not None and number != f.number:
                problems.append(
                    f"field {f.name!r}{f.where} was #{number} in bronze, the schema numbers it #{f.number}"
                )
            reused = names.get(f.number)
            if reused is not None and reused != f.name:
                problems.append(
                    f"field number #{f.number}{f.where} is reused: bronze has it as {reused!r}, "
                    f"now {f.name!r}"
                )
        return problems

    def _type_clash(self, message_type: str, f: FieldColumn, known: KnownColumn, clash: str) -> str:
        others = sorted(t for t, fields in self.numbers.items() if f.name in fields and t != message_type)
        if f.name in self.numbers.get(message_type, {}) or not others:
            if clash != f.name:  # inside the struct
                return f"field {clash!r} changed type inside column {f.name!r}: {_types(known, f, clash)}"
            return (
                f"field {f.name!r} changed type: bronze has {type_name(known.arrow_type)}, "
                f"the schema has {type_name(f.arrow_type)}"
            )
        return (
            f"field {f.name!r} of {message_type} is {type_name(f.arrow_type)}, but bronze's column "
            f"{f.name!r} is {type_name(known.arrow_type)} (from {', '.join(others)}): one column "
            "has one type across the message types of a table"
        )

    def accept(
        self, message_type: str, fields: list[FieldColumn], nested: FieldNumbers | None = None
    ) -> list[pa.Field]:
        """Record ``fields`` of ``message_type`` (already checked); returns the bronze columns to
        add or widen: new columns, and structs that gained fields (their merged type)."""
        changed = []
        for f in fields:
            known = self.columns.get(f.name)
            merged = f.arrow_type if known is None else widened(known.arrow_type, f.arrow_type)
            if known is None or not _same(merged, known.arrow_type):
                self.columns[f.name] = KnownColumn(f.name, merged)
                changed.append(pa.field(f.name, merged))
        numbered = {f.name: f.number for f in fields if f.number is not None}
        for type_name_, fields_numbers in {**(nested or {}), message_type: numbered}.items():
            self.numbers.setdefault(type_name_, {}).update(fields_numbers)
        return changed

    def unrecorded(self) -> FieldNumbers:
        """The field numbers of each message type whose numbers bronze does not hold yet (all of them)."""
        return {t: dict(fields) for t, fields in self.numbers.items() if self._recorded.get(t) != fields}


@dataclass(frozen=True)
class _Numbered:
    name: str
    number: int
    where: str  # " of <nested type>" for a nested type's field, else ""


def _types(known: KnownColumn, f: FieldColumn, path: str) -> str:
    old, new = _child(known.arrow_type, path), _child(f.arrow_type, path)
    return f"bronze has {type_name(old)}, the schema has {type_name(new)}"


def _child(arrow_type: pa.DataType, path: str) -> pa.DataType:
    """The type at ``path`` (``column.child.grandchild``, lists and maps seen through)."""
    for name in path.split(".")[1:]:
        arrow_type = _struct_inside(arrow_type)
        arrow_type = arrow_type.field(name).type
    return arrow_type


def _struct_inside(arrow_type: pa.DataType) -> pa.DataType:
    while not pa.types.is_struct(arrow_type):
        arrow_type = arrow_type.item_type if pa.types.is_map(arrow_type) else arrow_type.value_type
    return arrow_type


def type_clash(path: str, known: pa.DataType, new: pa.DataType) -> str | None:
    """None when ``new`` may land in a column of type ``known`` (equal, or a struct that only
    gained or lost fields, at any depth); else the dotted path of the first clashing field."""
    if pa.types.is_struct(known) and pa.types.is_struct(new):
        for child in new:
            index = known.get_field_index(child.name)
            if index >= 0:
                clash = type_clash(f"{path}.{child.name}", known.field(index).type, child.type)
                if clash is not None:
                    return clash
        return None
    if pa.types.is_map(known) and pa.types.is_map(new):
        return type_clash(path, known.key_type, new.key_type) or type_clash(
            path, known.item_type, new.item_type
        )
    if _is_list(known) and _is_list(new):
        return type_clash(path, known.value_type, new.value_type)
    return None if known == new else path


def widened(known: pa.DataType, new: pa.DataType) -> pa.DataType:
    """The column type that holds both (checked by ``type_clash`` first): structs keep every field
    either has, bronze's order first."""
    if pa.types.is_struct(known) and pa.types.is_struct(new):
        fields = []
        for child in known:
            index = new.get_field_index(child.name)
            merged = child.type if index < 0 else widened(child.type, new.field(index).type)
            fields.append(pa.field(child.name, merged))
        fields += [c for c in new if known.get_field_index(c.name) < 0]
        return pa.struct(fields)
    if pa.types.is_map(known) and pa.types.is_map(new):
        return pa.map_(known.key_type, widened(known.item_type, new.item_type))
    if _is_list(known) and _is_list(new):
        return pa.list_(pa.field("element", widened(known.value_type, new.value_type)))
    return known


def _same(a: pa.DataType, b: pa.DataType) -> bool:
    """Equal types, whatever their list elements are named or their fields' nullability."""
    if pa.types.is_struct(a) and pa.types.is_struct(b):
        return [f.name for f in a] == [f.name for f in b] and all(
            _same(x.type, y.type) for x, y in zip(a, b, strict=True)
        )
    if pa.types.is_map(a) and pa.types.is_map(b):
        return _same(a.key_type, b.key_type) and _same(a.item_type, b.item_type)
    if _is_list(a) and _is_list(b):
        return _same(a.value_type, b.value_type)
    return bool(a == b)


def _is_list(arrow_type: pa.DataType) -> bool:
    return pa.types.is_list(arrow_type) or pa.types.is_large_list(arrow_type)
