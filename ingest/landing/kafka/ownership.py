"""The partitions this instance owns, and the last offset Delta holds for each.

``landed_offsets`` is read from bronze's Delta log when a partition is assigned, advanced
only after a Delta commit, and re-read from Delta whenever a batch is dropped. Kafka's
committed offsets are never read (offsets.py).
"""

from __future__ import annotations

import contextlib

from confluent_kafka import OFFSET_BEGINNING, Consumer, KafkaException
from confluent_kafka import TopicPartition as KafkaTopicPartition

from ingest.landing.delta.bronze_writer import BronzeWriter
from ingest.landing.delta.fences import Landing
from ingest.landing.kafka.offsets import StartPosition
from ingest.landing.records import TopicPartition


def tp_of(partition: KafkaTopicPartition) -> TopicPartition:
    return TopicPartition(partition.topic, partition.partition)


def _start_offset(landed: int | None) -> int:
    return OFFSET_BEGINNING if landed is None else landed + 1


class PartitionOwnership:
    def __init__(self, writer: BronzeWriter) -> None:
        self.writer = writer
        self.landed_offsets: dict[TopicPartition, int | None] = {}
        # Set when partitions were revoked or lost since the last commit or drop: only then
        # can a batch hold records of partitions this instance no longer owns.
        self.shrank = False
        # Offsets a dead-letter commit already holds above bronze's offset (lander.py); None
        # until read again after an assignment or a drop, the only times such a window can open.
        self.in_doubt: dict[TopicPartition, set[int]] | None = None

    def owns(self, tp: TopicPartition) -> bool:
        return tp in self.landed_offsets

    def take(self, partitions: list[KafkaTopicPartition]) -> None:
        """Own ``partitions`` and set each one's start to Delta's offset + 1 (earliest if never landed)."""
        for partition in partitions:
            position = StartPosition(tp_of(partition), self.writer.landed(tp_of(partition)))
            self.landed_offsets[position.tp] = position.landed
            partition.offset = OFFSET_BEGINNING if position.next_offset is None else position.next_offset
        self.in_doubt = None

    def release(self, partitions: list[KafkaTopicPartition]) -> None:
        for partition in partitions:
            self.landed_offsets.pop(tp_of(partition), None)
        self.shrank = True

    def landings(self, last_offsets: dict[TopicPartition, int]) -> dict[TopicPartition, Landing]:
        """The fenced commit's expectation per partition: from what we resumed, to the new last offset."""
        return {tp: Landing(self.landed_offsets[tp], last) for tp, last in last_offsets.items()}

    def advance(self, landings: dict[TopicPartition, Landing]) -> None:
        for tp, landing in landings.items():
            self.landed_offsets[tp] = landing.last
            if self.in_doubt and tp in self.in_doubt:
                self.in_doubt[tp] = {o for o in self.in_doubt[tp] if o > landing.last}
        self.shrank = False

    def rewind(self, consumer: Consumer) -> None:
        """Re-read every owned partition's offset from Delta and seek the consumer back to it."""
        self.shrank = False
        self.in_doubt = None
        for tp in list(self.landed_offsets):
            landed = self.writer.landed(tp)
            self.landed_offsets[tp] = landed
            # No longer assigned: the next assignment seeks to Delta's offset anyway.
            with contextlib.suppress(KafkaException):
                consumer.seek(KafkaTopicPartition(tp.topic, tp.partition, _start_offset(landed)))

    def resume_points(self, consumer: Consumer, tp: TopicPartition, offset: int) -> list[KafkaTopicPartition]:
        """The assignment that moves ``tp`` to ``offset`` and keeps every other partition where it is."""
        assignment = []
        for part in consumer.position(consumer.assignment()):
            here = part.offset if part.offset >= 0 else _start_offset(self.landed_offsets.get(tp_of(part)))
            assignment.append(
                KafkaTopicPartition(part.topic, part.partition, offset if tp_of(part) == tp else here)
            )
        return assignment
