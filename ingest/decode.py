"""Batch decoding: Confluent-framed protobuf Kafka records -> one Arrow table + dead letters.

Work per schema id happens once: the registry lookup, the message class and the column plan
are cached in ``Decoder``. Per message, the only Python work is framing, the upb parse and one
C-level ``attrgetter`` call that reads every scalar field; columns are then built by Arrow.
A batch may mix any number of schema ids; their tables are concatenated with missing
columns as null.
"""

from __future__ import annotations

import json
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from operator import attrgetter
from typing import Any, Protocol

import pyarrow as pa
import pyarrow.compute as pc
from google.protobuf import json_format, message_factory
from google.protobuf.message import Message

from ingest import wire
from ingest.columns import (
    EVENT_TIME_FIELD,
    KAFKA_COLUMNS,
    PARTITION_COLUMN,
    TIMESTAMP,
    FieldColumn,
    field_column,
)
from ingest.errors import DecodeError, FramingError, MessageError, SchemaGuardError, SchemaLookupError
from ingest.registry import RegistryClient, UnknownSchemaId, lookup_with_retry
from ingest.schema_guard import ColumnRegistry


class KafkaRecord(Protocol):
    """What the decoder reads from a record: confluent_kafka.Message has exactly these methods."""

    def topic(self) -> str | None: ...
    def partition(self) -> int | None: ...
    def offset(self) -> int | None: ...
    def timestamp(self) -> tuple[int, int]: ...
    def key(self) -> bytes | str | None: ...
    def value(self) -> bytes | str | None: ...
    def headers(self) -> list[tuple[str, bytes | None]] | None: ...


@dataclass(frozen=True)
class DeadLetter:
    """A record that cannot land, with why and where it failed."""

    record: KafkaRecord
    error: MessageError
    schema_id: int | None = None


@dataclass
class DecodedBatch:
    table: pa.Table | None
    dead_letters: list[DeadLetter]
    schema_ids: set[int]
    new_columns: list[FieldColumn] = field(default_factory=list)


@dataclass
class Plan:
    """Everything needed to turn payloads of one (schema id, message path) into columns."""

    schema_id: int
    message_class: type[Message]
    columns: list[FieldColumn]

    def __post_init__(self) -> None:
        flat = [c for c in self.columns if c.kind in ("scalar", "enum")]
        self._flat = flat
        self._flat_getter = attrgetter(*(c.name for c in flat)) if flat else None
        self._timestamps = [c for c in self.columns if c.kind == "timestamp"]
        self._json = [c for c in self.columns if c.kind == "json"]

    def parse(self, payloads: list[bytes]) -> tuple[list[Message], list[int], list[tuple[int, str]]]:
        """Parse each payload; returns (messages, their positions, [(position, error)])."""
        parse = self.message_class.FromString
        messages: list[Message] = []
        good: list[int] = []
        bad: list[tuple[int, str]] = []
        for i, payload in enumerate(payloads):
            try:
                messages.append(parse(payload))
                good.append(i)
            except Exception as err:  # upb raises DecodeError, RuntimeWarning-like errors vary by runtime
                bad.append((i, f"invalid protobuf for {self.message_class.DESCRIPTOR.full_name}: {err}"))
        return messages, good, bad

    def columns_of(self, messages: list[Message]) -> dict[str, pa.Array]:
        out: dict[str, pa.Array] = {}
        if self._flat_getter is not None:
            rows = list(map(self._flat_getter, messages))
            columns = zip(*rows, strict=True) if len(self._flat) > 1 else [tuple(rows)]
            for col, values in zip(self._flat, columns, strict=True):
                out[col.name] = self._flat_array(col, values, len(messages))
        for col in self._timestamps:
            out[col.name] = _timestamp_array(col.name, messages)
        for col in self._json:
            out[col.name] = pa.array([_json_value(m, col.name) for m in messages], pa.string())
        return out

    @staticmethod
    def _flat_array(col: FieldColumn, values: Sequence[Any], n: int) -> pa.Array:
        if not n:
            return pa.array([], col.arrow_type)
        if col.kind == "enum":
            names = {v.number: v.name for v in col.descriptor.enum_type.values}
            return pa.array([names.get(v, str(v)) for v in values], pa.string())
        return pa.array(values, col.arrow_type)


def _timestamp_array(name: str, messages: list[Message]) -> pa.Array:
    getter = attrgetter(f"{name}.seconds", f"{name}.nanos")
    pairs = list(map(getter, messages))
    if not pairs:
        return pa.array([], TIMESTAMP)
    seconds, nanos = (pa.array(v, pa.int64()) for v in zip(*pairs, strict=True))
    micros = pc.add(pc.multiply(seconds, 1_000_000), pc.divide(nanos, 1_000))
    unset = pc.and_(pc.equal(seconds, 0), pc.equal(nanos, 0))
    if pc.any(unset).as_py():  # an all-zero Timestamp may be unset: ask the message
        present = pa.array([m.HasField(name) for m in messages])
        micros = pc.if_else(present, micros, pa.nulls(len(messages), pa.int64()))
    return micros.cast(TIMESTAMP)


def _json_value(message: Message, name: str) -> str | None:
    as_dict = json_format.MessageToDict(message, preserving_proto_field_name=True)
    return json.dumps(as_dict[name], sort_keys=True) if name in as_dict else None


def _key_text(key: bytes | str | None) -> str | None:
    if key is None or isinstance(key, str):
        return key
    return key.decode("utf-8", "backslashreplace")


def _as_bytes(value: bytes | str | None) -> bytes | None:
    return value.encode() if isinstance(value, str) else value


class Decoder:
    """Decodes batches; caches one Plan per (schema id, message path) and unknown ids for a while."""

    def __init__(
        self, registry: RegistryClient, unknown_retries: int, backoff_s: float, unknown_ttl_s: float = 30.0
    ) -> None:
        self._registry = registry
        self._retries = unknown_retries
        self._backoff_s = backoff_s
        self._unknown_ttl_s = unknown_ttl_s
        self._plans: dict[tuple[int, tuple[int, ...]], Plan] = {}
        self._unknown: dict[int, tuple[float, str]] = {}

    def plan(self, schema_id: int, indexes: tuple[int, ...]) -> Plan:
        """The cached plan; raises SchemaLookupError (after bounded retries) or RegistryUnavailable."""
        key = (schema_id, indexes)
        cached = self._plans.get(key)
        if cached is not None:
            return cached
        remembered = self._unknown.get(schema_id)
        if remembered is not None and time.monotonic() - remembered[0] < self._unknown_ttl_s:
            raise SchemaLookupError(remembered[1])
        try:
            schema = lookup_with_retry(self._registry, schema_id, self._retries, self._backoff_s)
        except UnknownSchemaId as err:
            reason = f"{err} (after {self._retries + 1} lookups)"
            self._unknown[schema_id] = (time.monotonic(), reason)
            raise SchemaLookupError(reason) from None
        try:
            descriptor = schema.message(indexes)
        except (IndexError, KeyError) as err:
            raise SchemaLookupError(
                f"schema id {schema_id} has no message at path {list(indexes)}: {err}"
            ) from None
        plan = Plan(
            schema_id,
            message_factory.GetMessageClass(descriptor),
            [field_column(f) for f in descriptor.fields],
        )
        self._plans[key] = plan
        return plan

    def decode(self, records: Sequence[KafkaRecord], guard: ColumnRegistry) -> DecodedBatch:
        """Decode ``records``; guard violations and undecodable records become dead letters."""
        dead: list[DeadLetter] = []
        groups: dict[tuple[int, tuple[int, ...]], list[int]] = {}
        starts: list[int] = [0] * len(records)
        values = [_as_bytes(r.value()) for r in records]
        for i, value in enumerate(values):
            try:
                frame = wire.parse(value)
            except FramingError as err:
                dead.append(DeadLetter(records[i], _located(err, records[i])))
                continue
            starts[i] = frame.payload_start
            groups.setdefault((frame.schema_id, frame.message_indexes), []).append(i)

        tables: list[pa.Table] = []
        schema_ids: set[int] = set()
        new_columns: list[FieldColumn] = []
        for (schema_id, indexes), positions in groups.items():
            try:
                plan = self.plan(schema_id, indexes)
                problems = guard.violations(plan.columns)
                if problems:
                    raise SchemaGuardError(
                        f"schema id {schema_id} refused by the schema guard: " + "; ".join(problems)
                    )
            except (SchemaLookupError, SchemaGuardError) as err:
                dead += [DeadLetter(records[i], _located(err, records[i]), schema_id) for i in positions]
                continue
            new_columns += guard.accept(plan.columns)
            payloads = [values[i][starts[i] :] for i in positions]  # type: ignore[index]
            messages, good, bad = plan.parse(payloads)
            for pos, reason in bad:
                record = records[positions[pos]]
                dead.append(DeadLetter(record, _located(DecodeError(reason), record), schema_id))
            if messages:
                kept = [positions[p] for p in good]
                tables.append(self._table(plan, messages, [records[i] for i in kept]))
                schema_ids.add(schema_id)
        table = pa.concat_tables(tables, promote_options="default") if tables else None
        return DecodedBatch(table, dead, schema_ids, new_columns)

    @staticmethod
    def _table(plan: Plan, messages: list[Message], records: list[KafkaRecord]) -> pa.Table:
        columns = plan.columns_of(messages)
        n = len(records)
        kafka = {
            "_kafka_topic": pa.array([r.topic() for r in records], pa.string()),
            "_kafka_partition": pa.array([r.partition() for r in records], pa.int32()),
            "_kafka_offset": pa.array([r.offset() for r in records], pa.int64()),
            "_kafka_timestamp": pa.array([r.timestamp()[1] * 1000 for r in records], pa.int64()).cast(
                TIMESTAMP
            ),
            "_kafka_key": pa.array([_key_text(r.key()) for r in records], pa.string()),
            "_schema_id": pa.repeat(pa.scalar(plan.schema_id, pa.int32()), n),
        }
        event_time = columns.get(EVENT_TIME_FIELD)
        if event_time is None or event_time.type != TIMESTAMP:
            event_time = kafka["_kafka_timestamp"]
        else:
            event_time = pc.coalesce(event_time, kafka["_kafka_timestamp"])
        date = event_time.cast(pa.date32())
        fields = [c.arrow_field for c in plan.columns]
        arrays = [columns[c.name] for c in plan.columns]
        kafka_fields = [f for f in KAFKA_COLUMNS if f.name in kafka]
        return pa.Table.from_arrays(
            [*arrays, *(kafka[f.name] for f in kafka_fields), date],
            schema=pa.schema([*fields, *kafka_fields, pa.field(PARTITION_COLUMN, pa.date32())]),
        )


def _located(err: MessageError, record: KafkaRecord) -> MessageError:
    """The same error, carrying the record's topic[partition]@offset."""
    located = type(err)(
        err.reason, topic=record.topic() or "", partition=record.partition() or 0, offset=record.offset() or 0
    )
    return located
