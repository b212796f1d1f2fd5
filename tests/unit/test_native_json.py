"""The Rust renderer (native/protojson) prints the JSON text the Python renderer prints, byte for byte.

The Python renderer (``JsonText`` in proto_arrow.py: ``MessageToDict`` then ``json.dumps`` with
sorted keys) is what bronze's JSON-text columns held before the native path; the Rust one must
not change a single character of it. Both render random messages of random schemas (every field
kind: 64-bit integers, floats, bytes, enums, Timestamp, Duration, wrappers, Any, Struct, maps,
nested and recursive messages) and hand-picked edge cases; where one raises, so must the other.
"""

from __future__ import annotations

import math

import pytest
from google.protobuf import descriptor_pb2, message_factory, struct_pb2
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from ingest.landing.decode import wire_format
from ingest.landing.decode.decoder import Decoder
from ingest.landing.decode.landing_schema import files_in_order
from ingest.landing.decode.proto_arrow import JsonText
from ingest.landing.decode.schema_guard import KnownColumns
from ingest.landing.decode.schema_registry import build_schema
from tests.random_schemas import fill, schemas
from tests.unit.test_native_decode import _plan, _record, _Registry

# The extension is built by `make setup` wherever cargo is found (CI has it); without cargo there
# is no Rust renderer to compare, and test_decode_without_rust_renderer.py covers the decoder.
Renderer = pytest.importorskip("gamelake_protojson", reason="not built: make setup found no cargo").Renderer


def _renderer(descriptor) -> Renderer:
    files = descriptor_pb2.FileDescriptorSet()
    for file in files_in_order(descriptor.file):
        file.CopyToProto(files.file.add())
    return Renderer(files.SerializeToString(), descriptor.full_name)


def _python(message) -> str | Exception:
    try:
        return JsonText(message.DESCRIPTOR).convert([message]).to_pylist()[0]
    except Exception as err:
        return err


def _rust(renderer: Renderer, message) -> str | Exception:
    try:
        return renderer.render([message.SerializeToString()])[0]
    except ValueError as err:
        return err


# Where the Rust renderer raises but Python renders, the native path hands the group to the upb
# path, which renders it: allowed for these causes only.
KNOWN_REFUSALS = (
    "holds -0.0",  # a proto3 double without presence: prost-reflect takes -0.0 for the default
    "type url",  # an Any with an empty type URL: Python renders {}
    "subnormal float32",  # Python prints it with 6 significant digits at least, ryu with the fewest
)


def assert_same_text(message) -> None:
    """The same text, or both raise, or the Rust renderer refuses for a known cause."""
    python, rust = _python(message), _rust(_renderer(message.DESCRIPTOR), message)
    if isinstance(rust, Exception) and not isinstance(python, Exception):
        assert any(cause in str(rust) for cause in KNOWN_REFUSALS), (python, rust)
    elif isinstance(python, Exception) or isinstance(rust, Exception):
        assert isinstance(python, Exception) and isinstance(rust, Exception), (python, rust)
    else:
        assert rust == python


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(file=schemas(), data=st.data())
def test_random_messages_of_random_schemas_render_the_same_text(file, data):
    built = build_schema(1, file)
    message = message_factory.GetMessageClass(built.pool.FindMessageTypeByName("rnd.Event"))()
    fill(data.draw, message)
    assert_same_text(message)


@pytest.mark.parametrize(
    "value",
    [
        {"a": 3.0, "b": -0.0, "c": 1e16, "d": 1.5e-05, "e": 0.0001, "f": 123456789012345.6, "g": 5e-324},
        {"é": "ünïcode ✓ 𝄞", "ctl": '\x00\x1f\x7f\n\t"\\', "": None, "t": True},
        {"nested": {"list": [1.0, "x", None, [], {}], "deep": {"z": {"y": [False]}}}},
        {},
    ],
)
def test_structs_render_the_same_text(value):
    struct = struct_pb2.Struct()
    struct.update(value)
    assert_same_text(struct)


@pytest.mark.parametrize("number", [math.nan, math.inf, -math.inf])
def test_a_value_holding_nan_or_an_infinity_cannot_be_rendered_by_either(number):
    struct = struct_pb2.Struct()
    struct["x"] = number
    assert isinstance(_python(struct), Exception)
    with pytest.raises(ValueError, match="payload 0"):
        _renderer(struct.DESCRIPTOR).render([struct.SerializeToString()])


def test_doubles_outside_values_render_nan_and_infinity_as_strings_in_both():
    file = descriptor_pb2.FileDescriptorProto(name="x/d.proto", package="x", syntax="proto3")
    message = file.message_type.add(name="M")
    F = descriptor_pb2.FieldDescriptorProto
    message.field.add(name="d", number=1, type=F.TYPE_DOUBLE, label=F.LABEL_REPEATED)
    message.field.add(name="f", number=2, type=F.TYPE_FLOAT, label=F.LABEL_REPEATED)
    built = build_schema(1, file)
    cls = message_factory.GetMessageClass(built.pool.FindMessageTypeByName("x.M"))
    assert_same_text(cls(d=[math.nan, math.inf, -math.inf, 0.1], f=[math.nan, 0.1, 3.4028234663852886e38]))


def test_a_truncated_payload_is_a_value_error_naming_its_position():
    renderer = _renderer(struct_pb2.Struct.DESCRIPTOR)
    with pytest.raises(ValueError, match="payload 1"):
        renderer.render([b"", b"\x0a\x05ab"])


def test_a_negative_zero_without_presence_is_refused_by_rust_and_the_decoder_renders_it_in_python():
    file = descriptor_pb2.FileDescriptorProto(name="x/z.proto", package="x", syntax="proto3")
    F = descriptor_pb2.FieldDescriptorProto
    node = file.message_type.add(name="Node")  # recursive: past the limit its JSON is text
    node.field.add(name="weight", number=1, type=F.TYPE_DOUBLE, label=F.LABEL_OPTIONAL)
    node.field.add(name="child", number=2, type=F.TYPE_MESSAGE, type_name=".x.Node", label=F.LABEL_OPTIONAL)
    built = build_schema(1, file)
    deep = message_factory.GetMessageClass(built.pool.FindMessageTypeByName("x.Node"))()
    deep.child.child.child.weight = -0.0
    deep.child.child.child.child.weight = 2.0
    with pytest.raises(ValueError, match=r"holds -0\.0"):
        _renderer(deep.DESCRIPTOR).render([deep.child.child.child.SerializeToString()])

    assert _plan(built).native_columns([deep.SerializeToString()]) is None
    record = _record(wire_format.frame(1, deep.SerializeToString()))
    decoded = Decoder(_Registry(built), 0, 0.0).decode([record], KnownColumns())
    [child] = decoded.table.column("child").to_pylist()
    assert child["child"]["child"] == '{"child": {"weight": 2.0}, "weight": -0.0}'
