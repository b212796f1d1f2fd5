"""Where the consumer's offsets live: Delta app transactions, one per topic-partition.

Bronze's ``txn`` actions hold, per ``<app_id>:<topic>:<partition>``, the last Kafka offset
whose record is accounted for (landed in bronze or in dead letters). They are written in the
same Delta commit as the rows, so the table and its offsets can never disagree. Kafka's
committed offsets are only a mirror for lag monitoring; they are never read to decide
where to start.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass

from confluent_kafka import Consumer, KafkaException
from confluent_kafka import TopicPartition as KafkaTopicPartition

from ingest.core.logs.json_log import log_event
from ingest.landing.records import TopicPartition


@dataclass(frozen=True)
class StartPosition:
    """Where to resume a partition: ``next_offset`` None means 'the earliest offset Kafka has'."""

    tp: TopicPartition
    landed: int | None  # last offset accounted for in Delta, None if the partition never landed

    @property
    def next_offset(self) -> int | None:
        return None if self.landed is None else self.landed + 1


def mirror_to_kafka(consumer: Consumer, landed: dict[TopicPartition, int]) -> None:
    """Commit the landed offsets to Kafka too, for lag tools only: Delta holds the truth."""
    offsets = [KafkaTopicPartition(tp.topic, tp.partition, last + 1) for tp, last in landed.items()]
    try:
        consumer.commit(offsets=offsets, asynchronous=True)
    except KafkaException as err:  # only the lag mirror is stale
        log_event("kafka_commit_failed", logging.WARNING, error=str(err))
