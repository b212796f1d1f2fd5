"""A batch: the records polled since the last commit, and what it covers per partition."""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import asdict, dataclass

from confluent_kafka import Message

from ingest.core.settings.ingest_settings import IngestSettings
from ingest.landing.records import DecodedBatch, TopicPartition


class Batch:
    """Records buffered for the next commit; due at flush_rows, flush_bytes or flush_interval_s.

    The interval counts from when the batch's first record may have arrived: the last poll
    before it (``add`` is called once per poll, empty or not). Records that arrived while the
    previous batch was landing have waited since its last poll, so they wait the interval from
    then, not again from the poll that finds them: a record waits at most ``flush_interval_s``
    for its batch to be cut, however long landing takes.
    """

    def __init__(self) -> None:
        self.records: list[Message] = []
        self.bytes = 0
        self.started = 0.0
        self._last_poll = time.monotonic()

    def __len__(self) -> int:
        return len(self.records)

    def add(self, records: list[Message]) -> None:
        """The records of one poll (none when it came back empty)."""
        polled, self._last_poll = self._last_poll, time.monotonic()
        if not records:
            return
        if not self.records:
            self.started = polled  # they arrived after the poll before this one
        self.records += records
        self.bytes += sum(map(len, records))  # len(Message): its value's size, 0 for null

    def is_due(self, settings: IngestSettings) -> bool:
        return bool(self.records) and (
            len(self.records) >= settings.flush_rows
            or self.bytes >= settings.flush_bytes
            or time.monotonic() - self.started >= settings.flush_interval_s
        )

    def owned(self, owns: Callable[[TopicPartition], bool]) -> list[Message]:
        """The records of partitions ``owns`` accepts (all of them, but for a revoke race)."""
        held = {TopicPartition(r.topic() or "", r.partition() or 0) for r in self.records}
        if all(owns(tp) for tp in held):
            return self.records
        return [r for r in self.records if owns(TopicPartition(r.topic() or "", r.partition() or 0))]

    def clear(self) -> None:
        self.records, self.bytes = [], 0


@dataclass
class PartitionRange:
    """One partition's part of a landed batch."""

    first_offset: int
    last_offset: int
    rows: int
    dead_letters: int = 0

    def as_dict(self) -> dict[str, int]:
        return asdict(self)


def partition_ranges(decoded: DecodedBatch) -> dict[TopicPartition, PartitionRange]:
    """Per partition: first and last offset of the batch, rows landing in bronze, the rest dead letters."""
    out: dict[TopicPartition, PartitionRange] = {}
    if decoded.offsets is None or not decoded.offsets.num_rows:
        return out
    stats = decoded.offsets.group_by(["topic", "partition"], use_threads=False).aggregate(
        [("offset", "min"), ("offset", "max"), ("offset", "count")]
    )
    landing = _rows_per_partition(decoded)
    for row in stats.to_pylist():
        tp = TopicPartition(row["topic"] or "", row["partition"] or 0)
        rows = landing.get(tp, 0)
        out[tp] = PartitionRange(row["offset_min"], row["offset_max"], rows, row["offset_count"] - rows)
    return out


def _rows_per_partition(decoded: DecodedBatch) -> dict[TopicPartition, int]:
    if decoded.table is None:
        return {}
    counts = decoded.table.group_by(["_kafka_topic", "_kafka_partition"], use_threads=False).aggregate(
        [("_kafka_offset", "count")]
    )
    return {
        TopicPartition(row["_kafka_topic"] or "", row["_kafka_partition"] or 0): row["_kafka_offset_count"]
        for row in counts.to_pylist()
    }
