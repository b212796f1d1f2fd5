"""Protobuf values -> native Arrow arrays, column by column.

A ``Converter`` turns a list of Python values of one protobuf type (scalars, enum numbers,
messages, repeated containers, maps) into one Arrow array; message types nest converters, so a
message becomes a struct, a repeated field a list and a map a map, each built from flat child
arrays (one C-level ``map`` per field, never a Python loop per value). Unset fields with
presence (``optional``, oneof members, messages) are null; a oneof adds a string child named
after it that says which member is set.

Well-known types: Timestamp -> timestamp (UTC, microseconds); Duration -> bigint microseconds;
wrappers (``Int64Value``...) -> their nullable scalar; Struct, Value, ListValue and messages
without fields -> their canonical JSON text. A message type may nest inside itself
``RECURSION_LIMIT`` times; deeper, the field lands as JSON text (nothing is dropped).
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass
from itertools import chain
from operator import attrgetter, methodcaller
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
from google.protobuf import descriptor_pb2, json_format
from google.protobuf.descriptor import Descriptor, FieldDescriptor

TIMESTAMP = pa.timestamp("us", tz="UTC")
RECURSION_LIMIT = 3  # times one message type may appear inside itself before JSON takes over

SCALARS: dict[int, pa.DataType] = {
    FieldDescriptor.TYPE_DOUBLE: pa.float64(),
    FieldDescriptor.TYPE_FLOAT: pa.float32(),
    FieldDescriptor.TYPE_INT64: pa.int64(),
    FieldDescriptor.TYPE_SINT64: pa.int64(),
    FieldDescriptor.TYPE_SFIXED64: pa.int64(),
    FieldDescriptor.TYPE_UINT64: pa.decimal128(20, 0),  # 0..2^64-1 overflows bigint
    FieldDescriptor.TYPE_FIXED64: pa.decimal128(20, 0),
    FieldDescriptor.TYPE_INT32: pa.int32(),
    FieldDescriptor.TYPE_SINT32: pa.int32(),
    FieldDescriptor.TYPE_SFIXED32: pa.int32(),
    FieldDescriptor.TYPE_UINT32: pa.int64(),
    FieldDescriptor.TYPE_FIXED32: pa.int64(),
    FieldDescriptor.TYPE_BOOL: pa.bool_(),
    FieldDescriptor.TYPE_STRING: pa.string(),
    FieldDescriptor.TYPE_BYTES: pa.binary(),
}
WRAPPERS = {
    "google.protobuf.DoubleValue": FieldDescriptor.TYPE_DOUBLE,
    "google.protobuf.FloatValue": FieldDescriptor.TYPE_FLOAT,
    "google.protobuf.Int64Value": FieldDescriptor.TYPE_INT64,
    "google.protobuf.UInt64Value": FieldDescriptor.TYPE_UINT64,
    "google.protobuf.Int32Value": FieldDescriptor.TYPE_INT32,
    "google.protobuf.UInt32Value": FieldDescriptor.TYPE_UINT32,
    "google.protobuf.BoolValue": FieldDescriptor.TYPE_BOOL,
    "google.protobuf.StringValue": FieldDescriptor.TYPE_STRING,
    "google.protobuf.BytesValue": FieldDescriptor.TYPE_BYTES,
}
JSON_TYPES = frozenset(["google.protobuf.Struct", "google.protobuf.Value", "google.protobuf.ListValue"])

Mask = list[bool] | None  # per value: set (True) or unset (False, the value becomes null)


def _masked(array: pa.Array, present: Mask) -> pa.Array:
    if present is None or all(present):
        return array
    return pc.if_else(pa.array(present, pa.bool_()), array, pa.nulls(len(array), array.type))


class Converter:
    """Python values of one protobuf type -> one Arrow array of ``arrow_type``."""

    arrow_type: pa.DataType

    def convert(self, values: list[Any], present: Mask = None) -> pa.Array:
        raise NotImplementedError

    def message_types(self) -> dict[str, dict[str, int]]:
        """The field numbers of every message type converted natively inside this one."""
        return {}


@dataclass
class Scalar(Converter):
    arrow_type: pa.DataType

    def convert(self, values: list[Any], present: Mask = None) -> pa.Array:
        return _masked(pa.array(values, self.arrow_type), present)


class Enum(Converter):
    """An enum number -> its value name; a number the schema does not name stays as its digits."""

    arrow_type = pa.string()

    def __init__(self, field: FieldDescriptor) -> None:
        self._names = {v.number: v.name for v in field.enum_type.values}

    def convert(self, values: list[Any], present: Mask = None) -> pa.Array:
        names = self._names
        return _masked(pa.array([names.get(v, str(v)) for v in values], pa.string()), present)


_SECONDS = attrgetter("seconds")
_NANOS = attrgetter("nanos")


def _micros(messages: list[Any]) -> pa.Array:
    seconds = pa.array(list(map(_SECONDS, messages)), pa.int64())
    nanos = pa.array(list(map(_NANOS, messages)), pa.int64())
    return micros(seconds, nanos)


def micros(seconds: pa.Array, nanos: pa.Array) -> pa.Array:
    """Timestamp or Duration fields -> microseconds, floored toward minus infinity, so -1 ns is
    -1 us, like the instant it stands for."""
    sub = pc.floor(pc.divide(nanos.cast(pa.float64()), 1000)).cast(pa.int64())
    return pc.add(pc.multiply(seconds.cast(pa.int64()), 1_000_000), sub)


class Timestamp(Converter):
    arrow_type = TIMESTAMP

    def convert(self, values: list[Any], present: Mask = None) -> pa.Array:
        return _masked(_micros(values), present).cast(TIMESTAMP)


class Duration(Converter):
    """A Duration as bigint microseconds (a sub-microsecond remainder is floored)."""

    arrow_type = pa.int64()

    def convert(self, values: list[Any], present: Mask = None) -> pa.Array:
        return _masked(_micros(values), present)


@dataclass
class Wrapper(Converter):
    """``google.protobuf.Int64Value`` and kin: the wrapped scalar, null when unset."""

    arrow_type: pa.DataType

    def convert(self, values: list[Any], present: Mask = None) -> pa.Array:
        return _masked(pa.array(list(map(_VALUE, values)), self.arrow_type), present)


_VALUE = attrgetter("value")


class JsonText(Converter):
    """The canonical proto3 JSON of a message: dynamic types, and recursion past the limit."""

    arrow_type = pa.string()

    def __init__(self, message: Descriptor) -> None:
        self.message = message  # the type rendered, e.g. google.protobuf.Struct
        self._render = _DYNAMIC.get(message.full_name, _message_json)

    def convert(self, values: list[Any], present: Mask = None) -> pa.Array:
        render = self._render
        if present is None:
            return pa.array([_dumps(render(v)) for v in values], pa.string())
        # JSON is the slow path: render only the values that are set.
        texts = [_dumps(render(v)) if p else None for v, p in zip(values, present, strict=True)]
        return pa.array(texts, pa.string())


def _dumps(value: Any) -> str:
    return json.dumps(value, sort_keys=True, allow_nan=False)


def _message_json(message: Any) -> Any:
    return json_format.MessageToDict(message, preserving_proto_field_name=True)


# Struct, Value and ListValue walked directly, as MessageToDict renders them but several times
# faster: they are JSON already. A non-finite number raises, as in MessageToDict.
def _struct_json(struct: Any) -> dict[str, Any]:
    return {key: _value_json(value) for key, value in struct.fields.items()}


def _list_json(values: Any) -> list[Any]:
    return [_value_json(v) for v in values.values]


def _value_json(value: Any) -> Any:
    kind = value.WhichOneof("kind")
    if kind == "struct_value":
        return _struct_json(value.struct_value)
    if kind == "list_value":
        return _list_json(value.list_value)
    if kind is None or kind == "null_value":
        return None
    return getattr(value, kind)


_DYNAMIC = {
    "google.protobuf.Struct": _struct_json,
    "google.protobuf.Value": _value_json,
    "google.protobuf.ListValue": _list_json,
}


@dataclass
class ListOf(Converter):
    element: Converter

    @property
    def arrow_type(self) -> pa.DataType:
        return pa.list_(pa.field("element", self.element.arrow_type))

    def convert(self, values: list[Any], present: Mask = None) -> pa.Array:
        offsets = _offsets(values)
        flat = self.element.convert(list(chain.from_iterable(values)))
        return pa.ListArray.from_arrays(offsets, flat, type=self.arrow_type)

    def message_types(self) -> dict[str, dict[str, int]]:
        return self.element.message_types()


@dataclass
class MapOf(Converter):
    key: Converter
    value: Converter

    @property
    def arrow_type(self) -> pa.DataType:
        return pa.map_(self.key.arrow_type, self.value.arrow_type)

    def convert(self, values: list[Any], present: Mask = None) -> pa.Array:
        offsets = _offsets(values)
        items = list(chain.from_iterable(m.items() for m in values))
        keys = [k for k, _ in items]
        entries = [v for _, v in items]
        return pa.MapArray.from_arrays(
            offsets, self.key.convert(keys), self.value.convert(entries), type=self.arrow_type
        )

    def message_types(self) -> dict[str, dict[str, int]]:
        return self.value.message_types()


def _offsets(containers: list[Any]) -> pa.Array:
    lengths = np.fromiter(map(len, containers), dtype=np.int32, count=len(containers))
    offsets = np.zeros(len(containers) + 1, dtype=np.int32)
    np.cumsum(lengths, out=offsets[1:])
    return pa.array(offsets)


@dataclass
class FieldReader:
    """One field (or oneof case) of a message type, read over a list of its messages."""

    name: str
    number: int | None  # None for a oneof's case column
    converter: Converter
    read_values: Callable[[list[Any]], list[Any]]
    read_present: Callable[[list[Any]], list[bool]] | None

    def read(self, messages: list[Any]) -> pa.Array:
        values = self.read_values(messages)
        present = self.read_present(messages) if self.read_present is not None else None
        return self.converter.convert(values, present)


class OneofCase(Converter):
    arrow_type = pa.string()

    def convert(self, values: list[Any], present: Mask = None) -> pa.Array:
        return pa.array(values, pa.string())


@dataclass
class Struct(Converter):
    full_name: str
    fields: list[FieldReader]

    @property
    def arrow_type(self) -> pa.DataType:
        return pa.struct([pa.field(f.name, f.converter.arrow_type) for f in self.fields])

    def convert(self, values: list[Any], present: Mask = None) -> pa.Array:
        if present is None or all(present):
            return self._struct(values)
        # Only the set messages' fields are read: an unset one is null, and reading its defaults
        # would cost as much as a set one, at every level of a recursive type.
        flags = np.fromiter(present, dtype=bool, count=len(present))
        kept = self._struct([v for v, p in zip(values, present, strict=True) if p])
        positions = np.cumsum(flags, dtype=np.int64) - 1
        return kept.take(pa.array(positions, mask=~flags))

    def _struct(self, values: list[Any]) -> pa.StructArray:
        children = [f.read(values) for f in self.fields]
        return pa.StructArray.from_arrays(children, fields=list(self.arrow_type))

    def message_types(self) -> dict[str, dict[str, int]]:
        found = {self.full_name: {f.name: f.number for f in self.fields if f.number is not None}}
        for f in self.fields:
            found.update(f.converter.message_types())
        return found


def message_fields(message: Descriptor, ancestors: tuple[str, ...] = ()) -> list[FieldReader]:
    """A reader per field of ``message``, then one per (non-synthetic) oneof, for its case."""
    inside = (*ancestors, message.full_name)
    readers = [_field_reader(f, inside) for f in message.fields]
    return readers + [_case_reader(name) for name in _real_oneofs(message)]


def _field_reader(field: FieldDescriptor, ancestors: tuple[str, ...]) -> FieldReader:
    getter = attrgetter(field.name)
    values = _mapper(getter)
    repeated = _is_repeated(field)
    present = None
    if not repeated and field.has_presence:
        present = _mapper(methodcaller("HasField", field.name))
    return FieldReader(field.name, field.number, converter_for(field, ancestors), values, present)


def _mapper(function: Callable[[Any], Any]) -> Callable[[list[Any]], list[Any]]:
    return lambda messages: list(map(function, messages))


def _case_reader(oneof: str) -> FieldReader:
    return FieldReader(oneof, None, OneofCase(), _mapper(methodcaller("WhichOneof", oneof)), None)


def _real_oneofs(message: Descriptor) -> list[str]:
    """The message's oneofs, without proto3 ``optional``'s synthetic one-field oneofs."""
    if not message.oneofs:
        return []
    proto = descriptor_pb2.DescriptorProto()
    message.CopyToProto(proto)
    synthetic = {proto.oneof_decl[f.oneof_index].name for f in proto.field if f.proto3_optional}
    return [o.name for o in message.oneofs if o.name not in synthetic]


def converter_for(field: FieldDescriptor, ancestors: tuple[str, ...] = ()) -> Converter:
    """The converter of ``field``'s values; ``ancestors`` are the message types it sits in."""
    if _is_repeated(field):
        message = field.message_type
        if message is not None and message.GetOptions().map_entry:
            key, value = message.fields_by_name["key"], message.fields_by_name["value"]
            return MapOf(_single(key, ancestors), _single(value, ancestors))
        return ListOf(_single(field, ancestors))
    return _single(field, ancestors)


def _single(field: FieldDescriptor, ancestors: tuple[str, ...]) -> Converter:
    """The converter of one value of ``field``'s type (the element type of a repeated field)."""
    if field.type == FieldDescriptor.TYPE_ENUM:
        return Enum(field)
    if field.type not in (FieldDescriptor.TYPE_MESSAGE, FieldDescriptor.TYPE_GROUP):
        return Scalar(SCALARS[field.type])
    message = field.message_type
    name = message.full_name
    if name == "google.protobuf.Timestamp":
        return Timestamp()
    if name == "google.protobuf.Duration":
        return Duration()
    if name in WRAPPERS:
        return Wrapper(SCALARS[WRAPPERS[name]])
    if name in JSON_TYPES or not message.fields or ancestors.count(name) >= RECURSION_LIMIT:
        return JsonText(message)
    return Struct(name, message_fields(message, ancestors))


def _is_repeated(field: FieldDescriptor) -> bool:
    # protobuf 6 prefers is_repeated; older runtimes only have label.
    flag = getattr(field, "is_repeated", None)
    if flag is not None:
        return bool(flag)
    return bool(field.label == FieldDescriptor.LABEL_REPEATED)
