"""Bronze columns: how a protobuf field becomes a typed Arrow/Delta column, and the Kafka columns.

A decoded field keeps its proto name. Its type follows the table below; anything without a
flat equivalent (repeated fields, maps, nested messages other than Timestamp) lands as its
canonical JSON text, so nothing is dropped.
"""

from __future__ import annotations

from dataclasses import dataclass

import pyarrow as pa
from google.protobuf.descriptor import FieldDescriptor

TIMESTAMP = pa.timestamp("us", tz="UTC")
PARTITION_COLUMN = "event_date"
EVENT_TIME_FIELD = "event_timestamp"
# Bronze table property per message type: its fields' numbers as JSON, {name: number} (the guard's
# memory). Numbers belong to a message type, so each type has its own.
FIELD_NUMBERS_PREFIX = "gamelake.proto.fields."

KAFKA_COLUMNS = pa.schema(
    [
        pa.field("_kafka_topic", pa.string()),
        pa.field("_kafka_partition", pa.int32()),
        pa.field("_kafka_offset", pa.int64()),
        pa.field("_kafka_timestamp", TIMESTAMP),
        pa.field("_kafka_key", pa.string()),
        pa.field("_schema_id", pa.int32()),
        pa.field("_message_type", pa.string()),
        pa.field("_ingested_at", TIMESTAMP),
    ]
)
RESERVED_NAMES = frozenset([*KAFKA_COLUMNS.names, PARTITION_COLUMN])

_SCALARS: dict[int, pa.DataType] = {
    FieldDescriptor.TYPE_DOUBLE: pa.float64(),
    FieldDescriptor.TYPE_FLOAT: pa.float32(),
    FieldDescriptor.TYPE_INT64: pa.int64(),
    FieldDescriptor.TYPE_SINT64: pa.int64(),
    FieldDescriptor.TYPE_SFIXED64: pa.int64(),
    FieldDescriptor.TYPE_UINT64: pa.decimal128(20, 0),
    FieldDescriptor.TYPE_FIXED64: pa.decimal128(20, 0),
    FieldDescriptor.TYPE_INT32: pa.int32(),
    FieldDescriptor.TYPE_SINT32: pa.int32(),
    FieldDescriptor.TYPE_SFIXED32: pa.int32(),
    FieldDescriptor.TYPE_UINT32: pa.int64(),
    FieldDescriptor.TYPE_FIXED32: pa.int64(),
    FieldDescriptor.TYPE_BOOL: pa.bool_(),
    FieldDescriptor.TYPE_STRING: pa.string(),
    FieldDescriptor.TYPE_BYTES: pa.binary(),
    FieldDescriptor.TYPE_ENUM: pa.string(),
}


@dataclass(frozen=True)
class FieldColumn:
    """One proto field and the bronze column it lands in."""

    name: str
    number: int
    arrow_type: pa.DataType
    kind: str  # "scalar", "enum", "timestamp" or "json"
    descriptor: FieldDescriptor

    @property
    def arrow_field(self) -> pa.Field:
        return pa.field(self.name, self.arrow_type)


def _is_repeated(field: FieldDescriptor) -> bool:
    # protobuf 6 prefers is_repeated; older runtimes only have label.
    flag = getattr(field, "is_repeated", None)
    if flag is not None:
        return bool(flag)
    return bool(field.label == FieldDescriptor.LABEL_REPEATED)


def field_column(field: FieldDescriptor) -> FieldColumn:
    if _is_repeated(field):
        return FieldColumn(field.name, field.number, pa.string(), "json", field)
    if field.type == FieldDescriptor.TYPE_MESSAGE:
        if field.message_type.full_name == "google.protobuf.Timestamp":
            return FieldColumn(field.name, field.number, TIMESTAMP, "timestamp", field)
        return FieldColumn(field.name, field.number, pa.string(), "json", field)
    kind = "enum" if field.type == FieldDescriptor.TYPE_ENUM else "scalar"
    return FieldColumn(field.name, field.number, _SCALARS[field.type], kind, field)


def type_name(arrow_type: pa.DataType) -> str:
    """A readable type name for error messages, e.g. 'int64' or 'timestamp[us, tz=UTC]'."""
    return str(arrow_type)
