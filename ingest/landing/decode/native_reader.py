"""Payloads -> bronze columns in native code: ptars reads protobuf straight into Arrow.

The upb path (decoder.py, proto_arrow.py) reads every field of the parsed messages back through
Python; this path hands the group's payloads, once upb has parsed them (upb decides what is
valid), to ptars (Rust), which builds the Arrow arrays without a Python object per message or
per value. It reads the landing schema (landing_schema.py), so its arrays have bronze's shape;
what is left is done per column in Arrow: casts to bronze's types (uint64 -> decimal(20,0)),
Timestamp and Duration to microseconds, the oneof case columns, and the JSON text of the values
that are set, rendered in Rust by gamelake_protojson (native/protojson). That extension is
optional (``make setup`` builds it where cargo is found): without it, the Python renderer renders
the same text, and the records count as ``path="native_python_json"``.

Anything this path cannot read exactly as the upb path does raises (``NativeRefused``, or the
error of ptars or the renderer), and the decoder reads that group on the upb path. Both paths
give the same table: tests/unit/test_native_decode.py compares them on every schema shape.
"""

from __future__ import annotations

import functools
import importlib
import itertools
import logging
from collections.abc import Callable
from typing import Any

import numpy as np
import ptars
import pyarrow as pa
import pyarrow.compute as pc
from google.protobuf import descriptor_pb2, message_factory
from google.protobuf.descriptor import Descriptor, FieldDescriptor

from ingest.landing.decode.bronze_columns import FieldColumn
from ingest.landing.decode.landing_schema import files_in_order, landing_schema
from ingest.landing.decode.proto_arrow import (
    Converter,
    Duration,
    FieldReader,
    JsonText,
    ListOf,
    MapOf,
    Struct,
    Timestamp,
    micros,
)

log = logging.getLogger(__name__)


def _rust_renderer_class() -> Any | None:
    """gamelake_protojson's Renderer, or None where the extension was not built (no cargo)."""
    try:
        return importlib.import_module("gamelake_protojson").Renderer
    except ImportError:
        log.info("gamelake_protojson is not installed: JSON-text columns render in Python")
        return None


RUST_RENDERER = _rust_renderer_class()

CONFIG = ptars.PtarsConfig(
    enum_repr="string",  # an unnamed number comes as its digits, as on the upb path
    list_value_name="element",
)


class NativeRefused(Exception):
    """ptars gave up on a group of payloads (it panicked): the upb path reads them instead."""


class NativeReader:
    """Reads the bronze columns of one message type from its payloads, all at once."""

    def __init__(self, message: Descriptor, columns: list[FieldColumn]) -> None:
        self._message = message
        self._readers = [c.reader for c in columns]
        landing = landing_schema(message, self._readers).descriptor(message)
        self._handler = ptars.HandlerPool([landing.file], config=CONFIG).get_for_message(landing)
        renders_in_python = RUST_RENDERER is None and any(
            _renders_json_text(r.converter) for r in self._readers
        )
        # The decode path's label in gamelake_ingest_decoded_records_total.
        self.path = "native_python_json" if renders_in_python else "native"

    def columns(self, payloads: list[bytes]) -> dict[str, pa.Array]:
        """One array per bronze column; raises if any payload is not valid for the schema."""
        return _children(self.read_batch(payloads).column, self._readers, self._message)

    def read_batch(self, payloads: list[bytes]) -> pa.RecordBatch:
        """ptars's own read: the landing schema's fields, before bronze's types."""
        try:
            return self._handler.list_to_record_batch(payloads)
        except Exception:
            raise
        except BaseException as err:  # a Rust panic reaches Python as pyo3's PanicException
            if type(err).__name__ != "PanicException":
                raise
            raise NativeRefused(f"ptars panicked: {err}") from None


def _renders_json_text(converter: Converter) -> bool:
    if isinstance(converter, JsonText):
        return True
    if isinstance(converter, ListOf):
        return _renders_json_text(converter.element)
    if isinstance(converter, MapOf):
        return _renders_json_text(converter.value)
    if isinstance(converter, Struct):
        return any(_renders_json_text(f.converter) for f in converter.fields)
    return False


def _children(
    field_array: Callable[[str], pa.Array], readers: list[FieldReader], message: Descriptor
) -> dict[str, pa.Array]:
    arrays = {
        r.name: _adapt(field_array(r.name), r.converter, message.fields_by_number[r.number])
        for r in readers
        if r.number is not None
    }
    for reader in readers:
        if reader.number is None:  # a oneof's case column: the name of its member that is set
            members = [f.name for f in message.oneofs_by_name[reader.name].fields]
            arrays[reader.name] = _case(arrays, members)
    return {r.name: arrays[r.name] for r in readers}


def _adapt(array: pa.Array, converter: Converter, field: FieldDescriptor) -> pa.Array:
    if isinstance(converter, Struct):
        return _struct(array, converter, field.message_type)
    if isinstance(converter, ListOf) and isinstance(converter.element, JsonText):
        values = _json_text(array.values, converter.element)  # each element its own message
        return pa.ListArray.from_arrays(array.offsets, values, type=converter.arrow_type)
    if isinstance(converter, ListOf):
        values = _adapt(array.values, converter.element, field)
        return pa.ListArray.from_arrays(array.offsets, values, type=converter.arrow_type)
    if isinstance(converter, MapOf):
        _refuse_repeated_keys(array)
        value_field = field.message_type.fields_by_name["value"]
        keys = array.keys.cast(converter.key.arrow_type)
        items = _adapt(array.items, converter.value, value_field)
        return pa.MapArray.from_arrays(array.offsets, keys, items, type=converter.arrow_type)
    if isinstance(converter, JsonText):
        return _merged_json_text(array, converter)
    if isinstance(converter, (Timestamp, Duration)):
        return _micros(array).cast(converter.arrow_type)
    return array.cast(converter.arrow_type)


def _micros(array: pa.StructArray) -> pa.Array:
    found = micros(array.field("seconds"), array.field("nanos"))
    return (
        pc.if_else(array.is_valid(), found, pa.nulls(len(found), found.type)) if array.null_count else found
    )


def _struct(array: pa.StructArray, converter: Struct, message: Descriptor) -> pa.StructArray:
    children = _children(array.field, converter.fields, message)
    mask = pc.invert(array.is_valid()) if array.null_count else None
    return pa.StructArray.from_arrays(list(children.values()), fields=list(converter.arrow_type), mask=mask)


def _case(arrays: dict[str, pa.Array], members: list[str]) -> pa.Array:
    set_members = [arrays[m].is_valid() for m in members]
    if len(members) > 1 and pc.max(_count_true(set_members)).as_py() > 1:
        # Two members on the wire (concatenated messages): the last one wins, and the arrays
        # do not say which came last.
        raise NativeRefused(f"more than one member of oneof {members} is set")
    conditions = pa.StructArray.from_arrays(set_members, names=members)
    return pc.case_when(conditions, *[pa.scalar(m, pa.string()) for m in members])


def _count_true(flags: list[pa.Array]) -> pa.Array:
    total = flags[0].cast(pa.int8())
    for flag in flags[1:]:
        total = pc.add(total, flag.cast(pa.int8()))
    return total


def _refuse_repeated_keys(array: pa.MapArray) -> None:
    """A key twice in one map (concatenated messages): upb keeps the last value; refuse."""
    lengths = np.diff(array.offsets.to_numpy())
    if lengths.max(initial=0) < 2:
        return
    # Only maps of two entries or more can repeat one (list_parent_indices aborts on maps).
    in_longer = np.repeat(lengths >= 2, lengths)
    rows = np.repeat(np.arange(len(array)), lengths)[in_longer]
    pairs = pa.table({"row": rows, "key": array.keys.filter(pa.array(in_longer))})
    if pairs.group_by(["row", "key"]).aggregate([]).num_rows != len(rows):
        raise NativeRefused("a map holds a key twice")


def _json_text(array: pa.Array, converter: JsonText) -> pa.Array:
    """Raw message bytes (none null), rendered as the upb path renders them."""
    return pa.array(_render(converter, array.to_pylist()), pa.string())


def _merged_json_text(array: pa.ListArray, converter: JsonText) -> pa.Array:
    """Each row's occurrences of a message field, merged as upb merges them (their bytes one
    after the other are one message on the wire), then rendered; a row without any is null."""
    offsets = array.offsets.to_numpy()
    counts = np.diff(offsets)
    present = counts > 0
    raw = array.values.to_pylist()
    if counts.max(initial=0) > 1:
        raw = [b"".join(raw[start:end]) for start, end in itertools.pairwise(offsets) if end > start]
    texts = pa.array(_render(converter, raw), pa.string())
    if present.all():
        return texts
    positions = np.cumsum(present, dtype=np.int64) - 1
    return texts.take(pa.array(positions, mask=~present))


def _render(converter: JsonText, payloads: list[bytes]) -> list[str]:
    renderer = _renderer(converter.message)
    if renderer is not None:
        return renderer.render(payloads)
    parse = message_factory.GetMessageClass(converter.message).FromString
    return converter.convert([parse(p) for p in payloads]).to_pylist()


@functools.cache
def _renderer(message: Descriptor) -> Any | None:
    """The Rust renderer of ``message``'s JSON text (gamelake_protojson), or None where it cannot
    be built for the type or is not installed: the Python renderer then renders it."""
    if RUST_RENDERER is None:
        return None
    files = descriptor_pb2.FileDescriptorSet()
    for file in files_in_order(message.file):
        file.CopyToProto(files.file.add())
    try:
        return RUST_RENDERER(files.SerializeToString(), message.full_name)
    except ValueError as err:
        log.info("%s renders its JSON text in Python: %s", message.full_name, err)
        return None
