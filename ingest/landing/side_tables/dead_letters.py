"""Dead letters: every record that cannot land, kept whole, with where and why it failed.

The Delta sink writes ``bronze/dead_letters`` with one app transaction per partition (the last
offset it covers), so a batch re-read after a crash never writes the same dead letter twice.
The topic sink re-publishes the raw key and value with the original headers plus ``gamelake.*``
headers carrying the same fields as the table (at-least-once); the dead-letter record's own
timestamp is when it was dead-lettered. ``TOPIC_HEADERS`` names them.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from dataclasses import replace
from pathlib import Path
from typing import Protocol

import pyarrow as pa
import pyarrow.compute as pc
from confluent_kafka import KafkaException, Producer
from deltalake import CommitProperties, DeltaTable, Transaction, write_deltalake

from ingest.core.errors import IngestError
from ingest.core.settings.ingest_settings import IngestSettings
from ingest.core.settings.kafka_config import producer_config
from ingest.landing.decode.bronze_columns import TIMESTAMP
from ingest.landing.delta.kept_table import KeptTable
from ingest.landing.delta.table_location import TableLocation, as_location
from ingest.landing.delta.table_scan import scan
from ingest.landing.delta.tables import ensure_table
from ingest.landing.records import DeadLetter, DecodedBatch, KafkaRecord, TopicPartition, txn_app_id

HEADER = pa.struct([pa.field("key", pa.string()), pa.field("value", pa.binary())])
DEAD_LETTER_SCHEMA = pa.schema(
    [
        pa.field("dead_letter_id", pa.string()),
        pa.field("_kafka_topic", pa.string()),
        pa.field("_kafka_partition", pa.int32()),
        pa.field("_kafka_offset", pa.int64()),
        pa.field("_kafka_timestamp", TIMESTAMP),
        pa.field("_kafka_key", pa.binary()),
        pa.field("_kafka_headers", pa.list_(HEADER)),
        pa.field("value", pa.binary()),
        pa.field("schema_id", pa.int32()),
        pa.field("stage", pa.string()),
        pa.field("error", pa.string()),
        pa.field("batch_id", pa.string()),
        pa.field("dead_lettered_at", TIMESTAMP),
        pa.field("replayed_at", TIMESTAMP),
    ]
)


TOPIC_HEADERS = (
    "gamelake.topic",
    "gamelake.partition",
    "gamelake.offset",
    "gamelake.timestamp_ms",
    "gamelake.schema_id",
    "gamelake.stage",
    "gamelake.error",
    "gamelake.batch_id",
)


def dead_letter_id(topic: str, partition: int, offset: int) -> str:
    return f"{topic}:{partition}:{offset}"


def _bytes(value: bytes | str | None) -> bytes | None:
    return value.encode() if isinstance(value, str) else value


def to_table(letters: Sequence[DeadLetter], batch_id: str) -> pa.Table:
    now_us = int(time.time() * 1_000_000)
    rows = []
    for letter in letters:
        r: KafkaRecord = letter.record
        topic, partition, offset = r.topic() or "", r.partition() or 0, r.offset() or 0
        rows.append(
            {
                "dead_letter_id": dead_letter_id(topic, partition, offset),
                "_kafka_topic": topic,
                "_kafka_partition": partition,
                "_kafka_offset": offset,
                "_kafka_timestamp": r.timestamp()[1] * 1000,
                "_kafka_key": _bytes(r.key()),
                "_kafka_headers": [{"key": k, "value": _bytes(v)} for k, v in (r.headers() or [])],
                "value": _bytes(r.value()),
                "schema_id": letter.schema_id,
                "stage": letter.error.stage,
                "error": str(letter.error),
                "batch_id": batch_id,
                "dead_lettered_at": now_us,
                "replayed_at": None,
            }
        )
    return pa.Table.from_pylist(rows, schema=DEAD_LETTER_SCHEMA)


# Per partition: offsets above bronze's landed offset that a dead-letter commit already holds.
InDoubt = dict[TopicPartition, set[int]]


class DeadLetterSink(Protocol):
    def in_doubt(self, landed: dict[TopicPartition, int | None]) -> InDoubt: ...

    def write(
        self,
        letters: Sequence[DeadLetter],
        covers: dict[TopicPartition, int],
        batch_id: str,
        already: InDoubt | None = None,
    ) -> int: ...


class DeltaDeadLetters:
    """The ``bronze/dead_letters`` Delta table."""

    def __init__(self, path: Path | TableLocation, app_id: str) -> None:
        self.path = path
        self.app_id = f"{app_id}-dlq"
        ensure_table(path, DEAD_LETTER_SCHEMA, None, "dead_letters")
        self.kept = KeptTable(as_location(path))

    def in_doubt(self, landed: dict[TopicPartition, int | None]) -> InDoubt:
        """Offsets dead-lettered by a batch whose bronze commit never happened (a crash between the two).

        The dead-letter commit of a batch comes first; its app transaction says how far it
        covers. Where that is past bronze's offset, the batch is being read again, and what
        it dead-lettered then must stay a dead letter, whatever the record decodes to now.
        """
        table = self.kept.table
        table.update_incremental()
        out: InDoubt = {}
        for tp, bronze_offset in landed.items():
            covered = table.transaction_version(txn_app_id(self.app_id, tp))
            if covered is not None and (bronze_offset is None or covered > bronze_offset):
                out[tp] = _offsets(table, tp, -1 if bronze_offset is None else bronze_offset, covered)
        return out

    def write(
        self,
        letters: Sequence[DeadLetter],
        covers: dict[TopicPartition, int],
        batch_id: str,
        already: InDoubt | None = None,
    ) -> int:
        """Append the ``letters`` not already written, and move each partition's cover forward."""
        if not letters:
            return 0
        held = already or {}
        fresh = [
            letter for letter in letters if (letter.record.offset() or 0) not in held.get(_tp(letter), set())
        ]
        if not fresh:
            return 0
        table = self.kept.table
        table.update_incremental()
        txns = []
        for tp, last in covers.items():  # never backwards: a re-read batch may end earlier
            covered = table.transaction_version(txn_app_id(self.app_id, tp))
            txns.append(
                Transaction(txn_app_id(self.app_id, tp), max(last, covered if covered is not None else -1))
            )
        write_deltalake(
            table,
            to_table(fresh, batch_id),
            mode="append",
            commit_properties=CommitProperties(app_transactions=txns, custom_metadata={"batch_id": batch_id}),
        )
        return len(fresh)


def _offsets(table: DeltaTable, tp: TopicPartition, above: int, upto: int) -> set[int]:
    # Numbers go into the SQL; the topic (text) is matched in Arrow.
    where = (
        f'"_kafka_partition" = {int(tp.partition)}'
        f' AND "_kafka_offset" > {int(above)} AND "_kafka_offset" <= {int(upto)}'
    )
    found = scan(table, ["_kafka_topic", "_kafka_offset"], where=where)
    found = found.filter(pc.equal(found["_kafka_topic"], tp.topic))
    return set(found.column("_kafka_offset").to_pylist())


def without_rows(decoded: DecodedBatch, already: InDoubt) -> DecodedBatch:
    """``decoded`` with no bronze row for a record that ``already`` holds as a dead letter.

    Such a record was dead-lettered by a batch that crashed before its bronze commit; it may
    decode now (the registry learned its schema), but it must not land twice.
    """
    if decoded.table is None:
        return decoded
    table = decoded.table
    held = pa.array([False] * table.num_rows)
    for tp, offsets in already.items():
        here = pc.and_(
            pc.equal(table.column("_kafka_topic"), tp.topic),
            pc.equal(table.column("_kafka_partition"), tp.partition),
        )
        held = pc.or_(held, pc.and_(here, pc.is_in(table.column("_kafka_offset"), pa.array(sorted(offsets)))))
    if not pc.any(held).as_py():
        return decoded
    kept = table.filter(pc.invert(held))
    return replace(decoded, table=kept if kept.num_rows else None)


def _tp(letter: DeadLetter) -> TopicPartition:
    return TopicPartition(letter.record.topic() or "", letter.record.partition() or 0)


class TopicDeadLetters:
    """A dead-letter topic: the raw key and value, original headers plus ``gamelake.*`` headers."""

    def __init__(self, settings: IngestSettings) -> None:
        assert settings.dead_letter_topic is not None
        self.topic = settings.dead_letter_topic
        self.producer = Producer(producer_config(settings))

    def in_doubt(self, landed: dict[TopicPartition, int | None]) -> InDoubt:
        """Nothing: a topic cannot be queried back cheaply; this sink is at-least-once (DESIGN)."""
        return {}

    def write(
        self,
        letters: Sequence[DeadLetter],
        covers: dict[TopicPartition, int],
        batch_id: str,
        already: InDoubt | None = None,
    ) -> int:
        errors: list[str] = []

        def delivered(err: object, _msg: object) -> None:
            if err is not None:
                errors.append(str(err))

        for letter in letters:
            r = letter.record
            headers: list[tuple[str, str | bytes | None]] = [
                *(r.headers() or []),
                ("gamelake.topic", (r.topic() or "").encode()),
                ("gamelake.partition", str(r.partition()).encode()),
                ("gamelake.offset", str(r.offset()).encode()),
                ("gamelake.timestamp_ms", str(r.timestamp()[1]).encode()),
                (
                    "gamelake.schema_id",
                    str(letter.schema_id if letter.schema_id is not None else "").encode(),
                ),
                ("gamelake.stage", letter.error.stage.encode()),
                ("gamelake.error", str(letter.error).encode()),
                ("gamelake.batch_id", batch_id.encode()),
            ]
            try:
                self.producer.produce(self.topic, r.value(), r.key(), headers=headers, on_delivery=delivered)
            except (KafkaException, BufferError) as err:
                errors.append(str(err))
        if self.producer.flush(30) or errors:
            raise IngestError(f"dead-letter topic {self.topic}: delivery failed: {errors[:3]}")
        return len(letters)


def make_sink(settings: IngestSettings) -> DeadLetterSink:
    if settings.dead_letter_sink == "topic":
        return TopicDeadLetters(settings)
    return DeltaDeadLetters(TableLocation.of(settings.landing_table("dead_letters")), settings.app_id)


def read_table(path: Path) -> pa.Table:
    return scan(DeltaTable(str(path)))
