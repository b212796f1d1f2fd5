"""The landing schema: a protobuf file whose message types mirror bronze's columns one to one.

Bronze does not land every message type as the producer wrote it: a recursive type nests
``RECURSION_LIMIT`` times and then becomes JSON text, and Struct, Value and ListValue are JSON
text at any depth (proto_arrow.py). The native decoder (native_reader.py) reads payloads with a
schema of the same shape: one synthetic message type per struct of the bronze column tree
(a recursive type unrolled to the limit), Timestamp and Duration as their two fields, and each
JSON-text field declared ``repeated bytes``. All are wire-compatible with the producer's
schema (a message field and a bytes field are the same length-delimited bytes on the wire), so
the payloads are read as they are, and each JSON-text value arrives as the raw bytes of its
every occurrence, merged and rendered afterwards where it is set.
"""

from __future__ import annotations

from dataclasses import dataclass

from google.protobuf import descriptor_pb2, descriptor_pool
from google.protobuf.descriptor import Descriptor, FieldDescriptor, FileDescriptor
from google.protobuf.descriptor_pb2 import FieldDescriptorProto as FieldProto

from ingest.landing.decode.proto_arrow import (
    Converter,
    Duration,
    FieldReader,
    JsonText,
    ListOf,
    MapOf,
    Struct,
    Timestamp,
)

PACKAGE = "gamelake_landing"
SECONDS = "Seconds"  # read as seconds and nanos, so microseconds are floored as on the upb path


class NotMirrored(Exception):
    """A schema whose every value the native path would not read exactly as upb does (groups,
    editions, closed enums, JSON text in a map value or oneof): the upb path decodes it."""


@dataclass
class LandingSchema:
    """The synthetic file, and the full name of its type for the top-level message."""

    file: descriptor_pb2.FileDescriptorProto
    root: str

    def descriptor(self, message: Descriptor) -> Descriptor:
        """The root's descriptor, in a new pool holding ``message``'s files and the landing file."""
        pool = descriptor_pool.DescriptorPool()
        for dependency in files_in_order(message.file):
            proto = descriptor_pb2.FileDescriptorProto()
            dependency.CopyToProto(proto)
            pool.Add(proto)
        pool.Add(self.file)
        return pool.FindMessageTypeByName(self.root)


def landing_schema(message: Descriptor, readers: list[FieldReader]) -> LandingSchema:
    """The landing schema of ``message``, whose bronze columns are read by ``readers``."""
    source = descriptor_pb2.FileDescriptorProto()
    message.file.CopyToProto(source)
    syntax = source.syntax or "proto2"
    if syntax not in ("proto2", "proto3"):
        raise NotMirrored(f"{message.file.name} uses syntax {syntax!r}")
    file = descriptor_pb2.FileDescriptorProto(
        name=f"{PACKAGE}/{message.full_name}.proto",
        package=PACKAGE,
        syntax=syntax,
        dependency=[f.name for f in files_in_order(message.file)],
    )
    seconds = file.message_type.add(name=SECONDS)  # Timestamp and Duration, field for field
    seconds.field.add(name="seconds", number=1, type=FieldProto.TYPE_INT64, label=FieldProto.LABEL_OPTIONAL)
    seconds.field.add(name="nanos", number=2, type=FieldProto.TYPE_INT32, label=FieldProto.LABEL_OPTIONAL)
    schema = LandingSchema(file, f"{PACKAGE}.T0")
    _Mirror(schema).message(message, readers, "T0")
    return schema


class _Mirror:
    def __init__(self, schema: LandingSchema) -> None:
        self._schema = schema
        self._count = 1

    def message(self, message: Descriptor, readers: list[FieldReader], name: str) -> None:
        proto = self._schema.file.message_type.add()
        original = descriptor_pb2.DescriptorProto()
        message.CopyToProto(original)
        proto.name = name
        proto.oneof_decl.extend(original.oneof_decl)
        by_number = {r.number: r for r in readers if r.number is not None}
        for source in original.field:
            reader = by_number[source.number]
            target = proto.field.add()
            target.CopyFrom(source)
            target.ClearField("options")
            target.ClearField("json_name")
            self._retype(target, reader.converter, message.fields_by_number[source.number], proto)

    def _retype(
        self,
        target: FieldProto,
        converter: Converter,
        descriptor: FieldDescriptor,
        parent: descriptor_pb2.DescriptorProto,
    ) -> None:
        if target.type == FieldProto.TYPE_GROUP:
            raise NotMirrored(f"field {descriptor.full_name} is a group")
        enum = descriptor.enum_type
        if isinstance(converter, MapOf):
            enum = descriptor.message_type.fields_by_name["value"].enum_type
        if enum is not None and enum.is_closed:
            # proto2: upb keeps a number the enum does not name as an unknown field (unset, or
            # the map entry left out); ptars would land its digits.
            raise NotMirrored(f"field {descriptor.full_name} has a closed (proto2) enum")
        if isinstance(converter, MapOf):
            self._map(target, converter, descriptor, parent)
            return
        single = converter.element if isinstance(converter, ListOf) else converter
        self._single(target, single, descriptor.message_type, parent)

    def _single(
        self,
        target: FieldProto,
        converter: Converter,
        message: Descriptor | None,
        parent: descriptor_pb2.DescriptorProto,
    ) -> None:
        if isinstance(converter, JsonText):
            self._raw(target, parent)
        elif isinstance(converter, (Timestamp, Duration)):
            target.type_name = f".{PACKAGE}.{SECONDS}"
        elif isinstance(converter, Struct):
            assert message is not None
            name = f"T{self._count}"
            self._count += 1
            target.type_name = f".{PACKAGE}.{name}"
            self.message(message, converter.fields, name)
        # Scalars, enums and wrappers keep their type: ptars reads them natively.

    def _map(
        self,
        target: FieldProto,
        converter: MapOf,
        descriptor: FieldDescriptor,
        parent: descriptor_pb2.DescriptorProto,
    ) -> None:
        entry_type = descriptor.message_type
        entry = parent.nested_type.add()
        entry_type.CopyToProto(entry)
        entry.name = f"Entry{target.number}"
        target.type_name = f".{PACKAGE}.{parent.name}.{entry.name}"
        value = next(f for f in entry.field if f.name == "value")
        self._single(value, converter.value, entry_type.fields_by_name["value"].message_type, entry)

    @staticmethod
    def _raw(target: FieldProto, parent: descriptor_pb2.DescriptorProto) -> None:
        """A JSON-text field as ``repeated bytes``: every occurrence on the wire, so the reader
        merges them as upb does (a message field may occur more than once in a payload)."""
        if parent.options.map_entry or target.HasField("oneof_index"):
            # Neither may be repeated: a map's values and oneof members of these types are rare
            # enough that the upb path keeps them exact.
            raise NotMirrored(f"a map value or oneof member {target.name} lands as JSON text")
        target.type = FieldProto.TYPE_BYTES
        target.label = FieldProto.LABEL_REPEATED
        target.ClearField("type_name")


def files_in_order(file: FileDescriptor) -> list[FileDescriptor]:
    """``file`` and every file it imports, transitively, each after its own imports."""
    ordered: list[FileDescriptor] = []
    seen: set[str] = set()

    def visit(current: FileDescriptor) -> None:
        if current.name in seen:
            return
        seen.add(current.name)
        for dependency in current.dependencies:
            visit(dependency)
        ordered.append(current)

    visit(file)
    return ordered
