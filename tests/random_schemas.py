"""Random valid protobuf schemas (hypothesis): one message with fields of every kind."""

from __future__ import annotations

from google.protobuf import descriptor_pb2
from hypothesis import strategies as st

F = descriptor_pb2.FieldDescriptorProto
SCALARS = [
    F.TYPE_DOUBLE, F.TYPE_FLOAT, F.TYPE_INT64, F.TYPE_UINT64, F.TYPE_INT32, F.TYPE_FIXED64,
    F.TYPE_FIXED32, F.TYPE_BOOL, F.TYPE_STRING, F.TYPE_BYTES, F.TYPE_UINT32, F.TYPE_SFIXED32,
    F.TYPE_SFIXED64, F.TYPE_SINT32, F.TYPE_SINT64,
]  # fmt: skip
WELL_KNOWN = {  # type name -> the file that defines it
    ".google.protobuf.Timestamp": "google/protobuf/timestamp.proto",
    ".google.protobuf.Duration": "google/protobuf/duration.proto",
    ".google.protobuf.Any": "google/protobuf/any.proto",
    ".google.protobuf.Struct": "google/protobuf/struct.proto",
    ".google.protobuf.StringValue": "google/protobuf/wrappers.proto",
    ".google.protobuf.Int64Value": "google/protobuf/wrappers.proto",
}
KINDS = [
    "scalar", "repeated", "enum", "nested", "map", "well_known", "oneof",
    "optional", "recursive", "repeated_nested", "map_of_nested",
]  # fmt: skip


@st.composite
def schemas(draw) -> descriptor_pb2.FileDescriptorProto:
    """A valid proto3 file: one message with random fields of every kind."""
    file = descriptor_pb2.FileDescriptorProto(name="random/event.proto", package="rnd", syntax="proto3")
    message = file.message_type.add(name="Event")
    enum = message.enum_type.add(name="Color")
    for number, name in enumerate(["RED", "GREEN"]):
        enum.value.add(name=name, number=number)
    inner = message.nested_type.add(name="Inner")
    inner.field.add(name="x", number=1, type=F.TYPE_INT64, label=F.LABEL_OPTIONAL)
    inner.field.add(name="tag", number=2, type=F.TYPE_STRING, label=F.LABEL_OPTIONAL)
    node = message.nested_type.add(name="Node")  # recursive: nests to the limit, then JSON text
    node.field.add(name="label", number=1, type=F.TYPE_STRING, label=F.LABEL_OPTIONAL)
    node.field.add(
        name="child", number=2, type=F.TYPE_MESSAGE, type_name=".rnd.Event.Node", label=F.LABEL_OPTIONAL
    )
    kinds = draw(st.lists(st.sampled_from(KINDS), min_size=1, max_size=8))
    for number, kind in enumerate(kinds, start=1):
        _add_field(draw, file, message, f"f{number}", number, kind)
    for field in message.field:  # proto3 optional: synthetic oneofs come after the real ones
        if field.proto3_optional:
            field.oneof_index = len(message.oneof_decl)
            message.oneof_decl.add(name=f"_{field.name}")
    return file


def _add_field(draw, file, message, name: str, number: int, kind: str) -> None:
    field = message.field.add(name=name, number=number, label=F.LABEL_OPTIONAL)
    if kind in ("scalar", "repeated", "oneof", "optional"):
        field.type = draw(st.sampled_from(SCALARS))
        field.proto3_optional = kind == "optional"
        if kind == "repeated":
            field.label = F.LABEL_REPEATED
        if kind == "oneof":
            field.oneof_index = len(message.oneof_decl)
            message.oneof_decl.add(name=f"choice{number}")
    elif kind == "enum":
        field.type, field.type_name = F.TYPE_ENUM, ".rnd.Event.Color"
    elif kind in ("nested", "repeated_nested"):
        field.type, field.type_name = F.TYPE_MESSAGE, ".rnd.Event.Inner"
        if kind == "repeated_nested":
            field.label = F.LABEL_REPEATED
    elif kind == "recursive":
        field.type, field.type_name = F.TYPE_MESSAGE, ".rnd.Event.Node"
    elif kind in ("map", "map_of_nested"):
        entry = message.nested_type.add(name=f"F{number}Entry")
        entry.options.map_entry = True
        entry.field.add(name="key", number=1, type=F.TYPE_STRING, label=F.LABEL_OPTIONAL)
        value = entry.field.add(name="value", number=2, type=F.TYPE_INT64, label=F.LABEL_OPTIONAL)
        if kind == "map_of_nested":
            value.type, value.type_name = F.TYPE_MESSAGE, ".rnd.Event.Inner"
        field.type, field.type_name, field.label = (
            F.TYPE_MESSAGE,
            f".rnd.Event.F{number}Entry",
            F.LABEL_REPEATED,
        )
    else:
        type_name = draw(st.sampled_from(sorted(WELL_KNOWN)))
        field.type, field.type_name = F.TYPE_MESSAGE, type_name
        if WELL_KNOWN[type_name] not in file.dependency:
            file.dependency.append(WELL_KNOWN[type_name])  # no reference: the runtime supplies it


_INTS = {
    F.TYPE_INT32: (-(2**31), 2**31 - 1), F.TYPE_SINT32: (-(2**31), 2**31 - 1),
    F.TYPE_SFIXED32: (-(2**31), 2**31 - 1), F.TYPE_UINT32: (0, 2**32 - 1), F.TYPE_FIXED32: (0, 2**32 - 1),
    F.TYPE_INT64: (-(2**63), 2**63 - 1), F.TYPE_SINT64: (-(2**63), 2**63 - 1),
    F.TYPE_SFIXED64: (-(2**63), 2**63 - 1), F.TYPE_UINT64: (0, 2**64 - 1), F.TYPE_FIXED64: (0, 2**64 - 1),
}  # fmt: skip
_JSON = st.recursive(
    st.none() | st.booleans() | st.floats(allow_nan=False, allow_infinity=False) | st.text(max_size=6),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=4), inner, max_size=3),
    max_leaves=8,
)


def scalar_values(field_type: int) -> st.SearchStrategy:
    """Any value a field of ``field_type`` may hold (NaN aside: it equals nothing, not even itself)."""
    if field_type in _INTS:
        low, high = _INTS[field_type]
        return st.integers(low, high)
    return {
        F.TYPE_DOUBLE: st.floats(allow_nan=False),
        F.TYPE_FLOAT: st.floats(allow_nan=False, width=32),
        F.TYPE_BOOL: st.booleans(),
        F.TYPE_STRING: st.text(max_size=8),
        F.TYPE_BYTES: st.binary(max_size=8),
    }[field_type]


def fill(draw, message, depth: int = 0) -> None:
    """Set each of ``message``'s fields to random values, or leave it unset, at random; messages
    nest at most 7 deep (a recursive type past the landing's limit, not past Python's)."""
    for field in message.DESCRIPTOR.fields:
        if draw(st.booleans()) or (field.message_type is not None and depth >= 7):
            continue  # unset
        _fill_field(draw, message, field, depth)


def _fill_field(draw, message, field, depth: int) -> None:
    kind = field.message_type
    if kind is not None and kind.GetOptions().map_entry:
        target = getattr(message, field.name)
        value_field = kind.fields_by_name["value"]
        for key in draw(st.lists(st.text(max_size=4), max_size=3)):
            if value_field.message_type is None:
                target[key] = draw(scalar_values(value_field.type))
            else:
                fill(draw, target[key], depth + 1)
    elif kind is not None and field.is_repeated:
        for _ in range(draw(st.integers(0, 3))):
            _fill_message(draw, getattr(message, field.name).add(), depth + 1)
    elif kind is not None:
        _fill_message(draw, getattr(message, field.name), depth + 1)
    elif field.is_repeated:
        getattr(message, field.name).extend(draw(st.lists(_single_values(field), max_size=3)))
    else:
        setattr(message, field.name, draw(_single_values(field)))


def _single_values(field) -> st.SearchStrategy:
    if field.enum_type is not None:
        return st.integers(0, 3)  # 2 and 3 are numbers the enum does not name
    return scalar_values(field.type)


def _fill_message(draw, message, depth: int) -> None:
    name = message.DESCRIPTOR.full_name
    if name == "google.protobuf.Timestamp":
        message.seconds = draw(st.integers(-62135596800, 253402300799))
        message.nanos = draw(st.integers(0, 999_999_999))
    elif name == "google.protobuf.Duration":
        seconds = draw(st.integers(-(10**9), 10**9))
        message.seconds = seconds
        message.nanos = draw(st.integers(0, 999_999_999)) * (-1 if seconds < 0 else 1)
    elif name == "google.protobuf.Struct":
        message.update(draw(st.dictionaries(st.text(max_size=4), _JSON, max_size=3)))
    elif name == "google.protobuf.Any":
        message.type_url = draw(st.text(max_size=6))
        message.value = draw(st.binary(max_size=4))
    else:
        message.SetInParent()
        fill(draw, message, depth)
