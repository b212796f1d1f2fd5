"""The types every part of the landing path shares: a Kafka record and its partition, a batch
as the decoder hands it on, and a record that cannot land.

``TopicPartition``'s app id (``txn_app_id``) names the Delta app transaction that holds the
partition's last landed offset (kafka/offsets.py says why offsets live there).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Protocol

import pyarrow as pa

from ingest.core.errors import MessageError

FieldNumbers = dict[str, dict[str, int]]  # message type full name -> {field name: number}


@dataclass(frozen=True, order=True)
class TopicPartition:
    topic: str
    partition: int

    def __str__(self) -> str:
        return f"{self.topic}[{self.partition}]"


def txn_app_id(app_id: str, tp: TopicPartition) -> str:
    return f"{app_id}:{tp.topic}:{tp.partition}"


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
    # Bronze columns to add, or to widen (a struct that gained fields): name and full type.
    new_columns: list[pa.Field] = field(default_factory=list)
    # The field numbers of each message type whose numbers bronze does not hold yet.
    field_numbers: FieldNumbers = field(default_factory=dict)
    # Topic, partition and offset of every record of the batch, dead letters included.
    offsets: pa.Table | None = None
