"""Batch decoding: Confluent-framed protobuf Kafka records -> one Arrow table + dead letters.

Work per schema id happens once: the registry lookup, the message class and the column plan
are cached in ``Decoder``. The batch is worked column by column, never row by row: the Kafka
metadata is read in one pass per field into Arrow arrays, framing groups values by their
header bytes (``wire.split``), each group is parsed by upb with one cached class, and each
field is read over all of a group's messages by one C-level ``map`` into a typed Arrow array.
A batch may mix any number of schema ids and message types; their tables are concatenated
with missing columns as null. A group's message type is the one its message indexes name in its
schema's file, and every row says which (``_message_type``, its full name).
"""

from __future__ import annotations

import contextlib
import gc
import logging
import time
from collections.abc import Iterator, Sequence
from dataclasses import dataclass

import pyarrow as pa
import pyarrow.compute as pc
from google.protobuf import message_factory
from google.protobuf.descriptor import Descriptor
from google.protobuf.message import Message

from ingest.core.errors import (
    DecodeError,
    MessageError,
    SchemaBuildError,
    SchemaGuardError,
    SchemaLookupError,
)
from ingest.core.metrics import prometheus as metrics
from ingest.landing.decode import wire_format as wire
from ingest.landing.decode.bronze_columns import (
    EVENT_TIME_FIELD,
    KAFKA_COLUMNS,
    PARTITION_COLUMN,
    TIMESTAMP,
    FieldColumn,
    message_columns,
)
from ingest.landing.decode.native_reader import NativeReader
from ingest.landing.decode.schema_guard import KnownColumns
from ingest.landing.decode.schema_registry import SchemaRegistryClient, UnknownSchemaId, lookup_with_retry
from ingest.landing.records import DeadLetter, DecodedBatch, FieldNumbers, KafkaRecord

log = logging.getLogger(__name__)


@dataclass
class KafkaColumns:
    """The Kafka metadata of a batch's records, read once per record and kept as Arrow arrays."""

    values: list[bytes | None]
    topic: pa.Array
    partition: pa.Array
    offset: pa.Array
    timestamp: pa.Array
    key: pa.Array

    @classmethod
    def of(cls, records: Sequence[KafkaRecord]) -> KafkaColumns:
        values = [r.value() for r in records]
        if str in set(map(type, values)):  # not from confluent_kafka, which gives bytes
            values = [_as_bytes(v) for v in values]
        keys = [r.key() for r in records]
        if str in set(map(type, keys)):
            keys = [_as_bytes(k) for k in keys]
        millis = pa.array([r.timestamp()[1] for r in records], pa.int64())
        return cls(
            values,  # type: ignore[arg-type]
            pa.array([r.topic() for r in records], pa.string()),
            pa.array([r.partition() for r in records], pa.int32()),
            pa.array([r.offset() for r in records], pa.int64()),
            pc.multiply(millis, 1000).cast(TIMESTAMP),
            _key_text(pa.array(keys, pa.binary())),
        )

    def offsets(self) -> pa.Table:
        return pa.table(
            {"topic": self.topic, "partition": self.partition, "offset": self.offset.fill_null(0)}
        )

    def columns(self, plan: Plan, positions: list[int]) -> dict[str, pa.Array]:
        """The Kafka columns of the records at ``positions`` (ascending), and the schema id and
        message type of their plan, each one value repeated."""
        n = len(positions)
        arrays = [self.topic, self.partition, self.offset, self.timestamp, self.key]
        if n != len(self.offset):  # a subset of the batch
            indices = pa.array(positions, pa.int64())
            arrays = [a.take(indices) for a in arrays]
        topic, partition, offset, timestamp, key = arrays
        return {
            "_kafka_topic": topic,
            "_kafka_partition": partition,
            "_kafka_offset": offset,
            "_kafka_timestamp": timestamp,
            "_kafka_key": key,
            "_schema_id": pa.repeat(pa.scalar(plan.schema_id, pa.int32()), n),
            "_message_type": pa.repeat(pa.scalar(plan.message_type, pa.string()), n),
        }


@dataclass
class Plan:
    """Everything needed to turn payloads of one (schema id, message path) into columns."""

    schema_id: int
    message_class: type[Message]
    columns: list[FieldColumn]
    native: NativeReader | None = None  # None: the upb path reads every group

    @property
    def message_type(self) -> str:
        """The message type's full name, e.g. ``gamelake.events.GameEvent``."""
        return str(self.message_class.DESCRIPTOR.full_name)

    def parse(self, payloads: list[bytes]) -> tuple[list[Message], list[int], list[tuple[int, str]]]:
        """Parse each payload; returns (messages, their positions, [(position, error)])."""
        parse = self.message_class.FromString
        try:
            messages = list(map(parse, payloads))
            return messages, list(range(len(messages))), []
        except Exception:  # some payload is bad: parse one at a time to find which
            pass
        messages = []
        good: list[int] = []
        bad: list[tuple[int, str]] = []
        for i, payload in enumerate(payloads):
            try:
                messages.append(parse(payload))
                good.append(i)
            except Exception as err:  # upb raises DecodeError, RuntimeWarning-like errors vary by runtime
                bad.append((i, f"invalid protobuf for {self.message_class.DESCRIPTOR.full_name}: {err}"))
        return messages, good, bad

    def native_columns(self, payloads: list[bytes]) -> dict[str, pa.Array] | None:
        """The columns read natively, or None where that path cannot read this group exactly as
        the upb path would (native_reader.py says when), so the upb path reads it."""
        if self.native is None:
            return None
        try:
            return self.native.columns(payloads)
        except Exception:
            return None

    def columns_of(self, messages: list[Message]) -> dict[str, pa.Array]:
        """One Arrow array per column, each read over all messages at once (proto_arrow.py)."""
        return {c.name: c.read(messages) for c in self.columns}

    def nested_types(self) -> FieldNumbers:
        """The field numbers of every message type nested natively in this plan's columns."""
        found: FieldNumbers = {}
        for c in self.columns:
            found.update(c.message_types())
        return found


def _key_text(keys: pa.Array) -> pa.Array:
    """Keys as text; a key that is not UTF-8 keeps its bytes as backslash escapes."""
    try:
        return keys.cast(pa.string())
    except pa.ArrowInvalid:
        return pa.array(
            [k.decode("utf-8", "backslashreplace") if k is not None else None for k in keys.to_pylist()],
            pa.string(),
        )


def _as_bytes(value: bytes | str | None) -> bytes | None:
    return value.encode() if isinstance(value, str) else value


class Decoder:
    """Decodes batches; caches one Plan per (schema id, message path) and unknown ids for a while."""

    def __init__(
        self,
        registry: SchemaRegistryClient,
        unknown_retries: int,
        backoff_s: float,
        unknown_ttl_s: float = 30.0,
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
        try:
            columns = message_columns(descriptor)
            plan = Plan(schema_id, message_factory.GetMessageClass(descriptor), columns)
        except Exception as err:  # a type the runtime cannot make a class or a column of
            raise SchemaBuildError(
                f"schema id {schema_id} message {descriptor.full_name} cannot be built: "
                f"{type(err).__name__}: {err}"
            ) from None
        plan.native = _native_reader(descriptor, columns)
        self._plans[key] = plan
        return plan

    def decode(self, records: Sequence[KafkaRecord], guard: KnownColumns) -> DecodedBatch:
        """Decode ``records``; guard violations and undecodable records become dead letters."""
        with _cycle_collector_paused():
            return self._decode(records, guard)

    def _decode(self, records: Sequence[KafkaRecord], guard: KnownColumns) -> DecodedBatch:
        kafka = KafkaColumns.of(records)
        groups, unframed = wire.split(kafka.values)
        dead = [DeadLetter(records[i], _located(err, records[i])) for i, err in unframed]
        tables: list[pa.Table] = []
        schema_ids: set[int] = set()
        new_columns: list[pa.Field] = []
        for group in groups:
            bad: list[tuple[int, MessageError]]
            try:
                plan = self._checked_plan(group.schema_id, group.message_indexes, guard)
            except (SchemaLookupError, SchemaBuildError, SchemaGuardError) as err:
                bad = [(i, err) for i in group.positions]
            else:
                new_columns += guard.accept(plan.message_type, plan.columns, plan.nested_types())
                table, bad = self._group_table(plan, group.payloads, group.positions, kafka)
                if table is not None:
                    tables.append(table)
                    schema_ids.add(group.schema_id)
            dead += [DeadLetter(records[i], _located(e, records[i]), group.schema_id) for i, e in bad]
        table = pa.concat_tables(tables, promote_options="default") if tables else None
        return DecodedBatch(table, dead, schema_ids, new_columns, guard.unrecorded(), kafka.offsets())

    def _checked_plan(self, schema_id: int, indexes: tuple[int, ...], guard: KnownColumns) -> Plan:
        plan = self.plan(schema_id, indexes)
        problems = guard.violations(plan.message_type, plan.columns, plan.nested_types())
        if problems:
            refused = "; ".join(problems)
            raise SchemaGuardError(
                f"schema id {schema_id} ({plan.message_type}) refused by the schema guard: {refused}"
            )
        return plan

    def _group_table(
        self, plan: Plan, payloads: list[bytes], positions: list[int], kafka: KafkaColumns
    ) -> tuple[pa.Table | None, list[tuple[int, MessageError]]]:
        """One schema's rows, and (record position, error) for each record that cannot land."""
        # upb's parse decides what is valid protobuf (ptars accepts some malformed unknown
        # fields that upb refuses); the native reader then builds the columns in Rust.
        messages, good, bad = plan.parse(payloads)
        failed: list[tuple[int, MessageError]] = [(positions[p], DecodeError(reason)) for p, reason in bad]
        if not messages:
            return None, failed
        kept = positions if not bad else [positions[p] for p in good]
        columns = plan.native_columns(payloads if not bad else [payloads[p] for p in good])
        if columns is not None:
            metrics.DECODE_PATH.labels(plan.native.path if plan.native else "native").inc(len(kept))
            return self._assemble(plan, columns, kafka.columns(plan, kept)), failed
        metrics.DECODE_PATH.labels("upb").inc(len(kept))
        try:
            return self._table(plan, messages, kafka.columns(plan, kept)), failed
        except Exception:  # some message's values cannot be read: find which, one at a time
            pass
        tables = []
        for message, position in zip(messages, kept, strict=True):
            try:
                tables.append(self._table(plan, [message], kafka.columns(plan, [position])))
            except Exception as err:  # e.g. an Any whose type the runtime does not know
                failed.append(
                    (position, DecodeError(f"cannot read the message's values: {type(err).__name__}: {err}"))
                )
        return (pa.concat_tables(tables, promote_options="default") if tables else None), failed

    @classmethod
    def _table(cls, plan: Plan, messages: list[Message], kafka: dict[str, pa.Array]) -> pa.Table:
        return cls._assemble(plan, plan.columns_of(messages), kafka)

    @staticmethod
    def _assemble(plan: Plan, columns: dict[str, pa.Array], kafka: dict[str, pa.Array]) -> pa.Table:
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


def _native_reader(descriptor: Descriptor, columns: list[FieldColumn]) -> NativeReader | None:
    """The native reader of a message type, or None where the landing schema cannot mirror it
    (groups, editions, a type ptars refuses): the upb path lands those alone, as before."""
    try:
        return NativeReader(descriptor, columns)
    except Exception as err:
        log.info("%s decodes on the upb path: %s: %s", descriptor.full_name, type(err).__name__, err)
        return None


@contextlib.contextmanager
def _cycle_collector_paused() -> Iterator[None]:
    """Decoding allocates a few objects per record, none in reference cycles (refcounting frees
    them); left on, the cycle collector would walk the growing heap again and again (~25 %)."""
    enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if enabled:
            gc.enable()


def _located(err: MessageError, record: KafkaRecord) -> MessageError:
    """The same error, carrying the record's topic[partition]@offset."""
    located = type(err)(
        err.reason, topic=record.topic() or "", partition=record.partition() or 0, offset=record.offset() or 0
    )
    return located
