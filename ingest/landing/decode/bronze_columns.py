"""Bronze columns: how a protobuf field becomes a typed Arrow/Delta column, and the Kafka columns.

A decoded field keeps its proto name, and its native type (proto_arrow.py has the mapping:
messages are structs, repeated fields arrays, maps maps).
"""

from __future__ import annotations

from dataclasses import dataclass

import pyarrow as pa
from google.protobuf.descriptor import Descriptor, FieldDescriptor
from google.protobuf.message import Message

from ingest.landing.decode.proto_arrow import TIMESTAMP, FieldReader, message_fields

PARTITION_COLUMN = "event_date"
EVENT_TIME_FIELD = "event_timestamp"
# Bronze table property per message type: its fields' numbers as JSON, {name: number} (the guard's
# memory). Numbers belong to a message type, so each type has its own.
FIELD_NUMBERS_PREFIX = "gamelake.proto.fields."
# commitInfo key of a bronze commit: the rows it adds, as text (0 for a batch that only
# dead-lettered), which readers' staleness goes by.
ROWS_KEY = "gamelake.rows"

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


@dataclass(frozen=True)
class FieldColumn:
    """One top-level proto field (or oneof case) and the bronze column it lands in."""

    reader: FieldReader

    @property
    def name(self) -> str:
        return self.reader.name

    @property
    def number(self) -> int | None:
        return self.reader.number

    @property
    def arrow_type(self) -> pa.DataType:
        return self.reader.converter.arrow_type

    @property
    def kind(self) -> str:
        """The converter's kind in lower case: "scalar", "enum", "timestamp", "struct", "listof"..."""
        return type(self.reader.converter).__name__.lower()

    @property
    def arrow_field(self) -> pa.Field:
        return pa.field(self.name, self.arrow_type)

    def read(self, messages: list[Message]) -> pa.Array:
        return self.reader.read(messages)

    def message_types(self) -> dict[str, dict[str, int]]:
        """Field numbers of the message types nested in this column (it is a struct, list, map)."""
        return self.reader.converter.message_types()


def message_columns(message: Descriptor) -> list[FieldColumn]:
    """The bronze columns of ``message``: its fields, then a case column per oneof."""
    return [FieldColumn(reader) for reader in message_fields(message)]


def field_column(field: FieldDescriptor) -> FieldColumn:
    """The bronze column of one top-level field of ``field.containing_type``."""
    readers = message_fields(field.containing_type)
    return FieldColumn(next(r for r in readers if r.name == field.name and r.number == field.number))


def type_name(arrow_type: pa.DataType) -> str:
    """A readable type name for error messages, e.g. 'int64' or 'timestamp[us, tz=UTC]'."""
    return str(arrow_type)
