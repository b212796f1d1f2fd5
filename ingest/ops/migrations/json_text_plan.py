"""What ``ingest bronze migrate-native-types`` converts: bronze's JSON text columns and their new types.

Until native types, the ingest landed messages, repeated fields, maps, wrappers and Duration as
JSON text (string columns). For each (schema id, message type) present in bronze, the registry's
schema says what the decoder now lands instead (``message_columns``); a string column whose new
type is not string is converted, with the type the guard would accept for every message type
that has it (structs widened). A oneof's case column bronze lacks is added; it can be computed
only when every member of the oneof is converted from JSON text, because the old decoder landed
scalar members without their presence (an unset member read as its default value).
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Protocol

import pyarrow as pa
import pyarrow.compute as pc
from deltalake import DeltaTable
from google.protobuf import message_factory
from google.protobuf.descriptor import Descriptor, FieldDescriptor
from google.protobuf.message import Message

from ingest.core.errors import IngestError
from ingest.landing.decode.bronze_columns import FieldColumn, message_columns, type_name
from ingest.landing.decode.schema_guard import type_clash, widened
from ingest.landing.decode.schema_registry import RegistrySchema

TypeKey = tuple[int, str | None]  # (_schema_id, _message_type); old rows may have no message type


class MigrationError(IngestError):
    """The migration cannot go on; nothing in bronze was changed."""


class SchemaLookup(Protocol):
    def schema(self, schema_id: int) -> RegistrySchema: ...


@dataclass
class TypePlan:
    """The conversion of one message type's rows: its class, the columns to rebuild it from, and
    the oneof case columns to add (computed from the rebuilt message, or left null)."""

    message_class: type[Message]
    converted: list[FieldColumn]
    cases: list[FieldColumn]
    computed_cases: set[str]

    @property
    def outputs(self) -> list[FieldColumn]:
        """The columns this type's rebuilt messages give: the converted ones, the computed cases."""
        return self.converted + [c for c in self.cases if c.name in self.computed_cases]


@dataclass
class MigrationPlan:
    old_schema: pa.Schema
    types: dict[TypeKey, TypePlan]
    new_types: dict[str, pa.DataType]  # converted and added columns -> their new type
    added: list[str]  # oneof case columns bronze lacks
    uncomputed_cases: dict[str, str] = field(default_factory=dict)  # added case column -> why null
    left: dict[str, str] = field(default_factory=dict)  # columns not converted -> why

    @property
    def converted(self) -> list[str]:
        return [name for name in self.new_types if name not in self.added]

    @property
    def new_schema(self) -> pa.Schema:
        fields = [pa.field(f.name, self.new_types.get(f.name, f.type)) for f in self.old_schema]
        return pa.schema(fields + [pa.field(name, self.new_types[name]) for name in self.added])

    def __bool__(self) -> bool:
        # Case columns alone are no reason to rewrite: the service adds them, null in old rows.
        return bool(self.converted)


def plan_migration(
    table: DeltaTable, registry: SchemaLookup, more_types: Iterable[TypeKey] = ()
) -> MigrationPlan:
    """The conversion of every message type present in ``table``, and of ``more_types`` (those of
    rows that silver holds and bronze may no longer)."""
    schema = pa.schema(table.schema().to_arrow())
    keys = sorted(set(present_types(table)) | set(more_types), key=str)
    descriptors = {key: _descriptor(registry, key) for key in keys}
    columns = {key: message_columns(d) for key, d in descriptors.items()}
    texts, left = _converted(descriptors, columns, schema)
    new_types: dict[str, pa.DataType] = {}
    for key, found in texts.items():
        for c in found:
            new_types[c.name] = _merged(c.name, new_types.get(c.name), c, key)
    cases = {
        c.name: c for f in columns.values() for c in f if c.number is None and c.name not in schema.names
    }
    new_types.update({name: c.arrow_type for name, c in cases.items()})
    types = {key: _type_plan(descriptors[key], columns[key], texts[key], list(cases)) for key in columns}
    plan = MigrationPlan(schema, types, new_types, list(cases), left=left)
    plan.uncomputed_cases = _uncomputed(descriptors, types, list(cases))
    return plan


def _converted(
    descriptors: dict[TypeKey, Descriptor], columns: dict[TypeKey, list[FieldColumn]], schema: pa.Schema
) -> tuple[dict[TypeKey, list[FieldColumn]], dict[str, str]]:
    """The JSON text columns to convert per message type, and the columns left as they are (why)."""
    texts: dict[TypeKey, list[FieldColumn]] = {}
    left: dict[str, str] = {}
    for key, found in columns.items():
        name = descriptors[key].full_name
        texts[key] = _json_texts(descriptors[key], found, schema)
        if texts[key] and not any(_clashes(c, schema) for c in texts[key]):
            # Only StringValue fields: the guard accepts this type today, so rows may have landed
            # since as plain text, and old and new rows cannot be told apart.
            left.update({c.name: f"{name} may hold old JSON text and new plain text" for c in texts[key]})
            texts[key] = []
        converting = {c.name for c in texts[key]}
        for c in found:
            if c.name not in converting and _clashes(c, schema):
                left[c.name] = f"not JSON text: bronze has {type_name(schema.field(c.name).type)}"
    return texts, left


def _json_texts(descriptor: Descriptor, found: list[FieldColumn], schema: pa.Schema) -> list[FieldColumn]:
    """The fields the old decoder landed as JSON text (repeated fields, messages but Timestamp)
    that land otherwise now, in bronze as string columns."""
    return [
        c
        for c in found
        if c.number is not None
        and c.kind != "jsontext"  # Struct, Value...: the same text then and now
        and c.name in schema.names
        and pa.types.is_string(schema.field(c.name).type)
        and _was_json(descriptor.fields_by_name[c.name])
    ]


def _was_json(f: FieldDescriptor) -> bool:
    if f.is_repeated:
        return True
    return f.type == FieldDescriptor.TYPE_MESSAGE and f.message_type.full_name != "google.protobuf.Timestamp"


def _clashes(column: FieldColumn, schema: pa.Schema) -> bool:
    if column.number is None or column.name not in schema.names:
        return False
    return type_clash(column.name, schema.field(column.name).type, column.arrow_type) is not None


def present_types(table: DeltaTable) -> list[TypeKey]:
    """Each distinct (schema id, message type) of bronze's rows."""
    keys = table.to_pyarrow_dataset().to_table(columns=["_schema_id", "_message_type"])
    distinct = keys.group_by(["_schema_id", "_message_type"]).aggregate([])
    ids = distinct["_schema_id"]
    if pc.any(pc.is_null(ids)).as_py():
        raise MigrationError("bronze has rows without a _schema_id: their schema cannot be known")
    return sorted(zip(ids.to_pylist(), distinct["_message_type"].to_pylist(), strict=True), key=str)


def _descriptor(registry: SchemaLookup, key: TypeKey) -> Descriptor:
    schema_id, message_type = key
    schema = registry.schema(schema_id)
    if message_type is None:  # rows landed before _message_type existed: the file's first message
        return schema.message((0,))
    try:
        return schema.pool.FindMessageTypeByName(message_type)
    except KeyError:
        raise MigrationError(f"schema id {schema_id} has no message type {message_type}") from None


def _merged(name: str, known: pa.DataType | None, column: FieldColumn, key: TypeKey) -> pa.DataType:
    """The column's type across message types: one type, structs widened with every field."""
    if known is None:
        return column.arrow_type
    clash = type_clash(name, known, column.arrow_type)
    if clash is not None:
        raise MigrationError(
            f"column {name!r} would be {type_name(known)} for one message type and "
            f"{type_name(column.arrow_type)} for {key[1]} (schema id {key[0]}): one column has one "
            "type across the message types of a table"
        )
    return widened(known, column.arrow_type)


def _type_plan(
    descriptor: Descriptor, found: list[FieldColumn], converted: list[FieldColumn], added: list[str]
) -> TypePlan:
    cases = [c for c in found if c.number is None and c.name in added]
    from_json = {c.name for c in converted}
    computed = {c.name for c in cases if _members(descriptor, c.name) <= from_json}
    return TypePlan(message_factory.GetMessageClass(descriptor), converted, cases, computed)


def _members(descriptor: Descriptor, oneof: str) -> set[str]:
    return {f.name for f in descriptor.oneofs_by_name[oneof].fields}


def _uncomputed(
    descriptors: dict[TypeKey, Descriptor], types: dict[TypeKey, TypePlan], added: list[str]
) -> dict[str, str]:
    """Why each added case column stays null for some message type's old rows."""
    reasons: dict[str, str] = {}
    for key, plan in types.items():
        for case in plan.cases:
            if case.name not in plan.computed_cases:
                members = ", ".join(sorted(_members(descriptors[key], case.name)))
                reasons[case.name] = (
                    f"null in the rows of {descriptors[key].full_name}: its members ({members}) "
                    "landed without presence before native types"
                )
    return {name: reasons[name] for name in added if name in reasons}
