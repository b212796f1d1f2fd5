"""A Delta offset that Kafka no longer has (retention deleted it unread): loud, recorded, by policy."""

from __future__ import annotations

import logging

from confluent_kafka import OFFSET_BEGINNING, Consumer, KafkaException, Message
from confluent_kafka import TopicPartition as KafkaTopicPartition

from ingest.core.errors import IngestError
from ingest.core.logs.json_log import log_event
from ingest.core.metrics import prometheus as metrics
from ingest.landing.kafka.ownership import PartitionOwnership
from ingest.landing.records import TopicPartition
from ingest.landing.side_tables.event_log import Event, EventLog


class OffsetExpiredError(IngestError):
    """Delta's offset of a partition is older than the earliest record Kafka still has."""


def _log_start(consumer: Consumer, tp: TopicPartition) -> int:
    try:
        ktp = KafkaTopicPartition(tp.topic, tp.partition)
        return int(consumer.get_watermark_offsets(ktp, timeout=5, cached=False)[0])
    except KafkaException:
        return -1


def handle_expired_offset(
    record: Message, consumer: Consumer, ownership: PartitionOwnership, policy: str, event_log: EventLog
) -> OffsetExpiredError | None:
    """Record the gap; with policy ``fail`` return the error to stop on, else restart at Kafka's start."""
    tp = TopicPartition(record.topic() or "", record.partition() or 0)
    landed = ownership.landed_offsets.get(tp)
    failed_at = record.offset()  # the offset the fetch asked for
    first_missing = (
        failed_at if failed_at is not None and failed_at >= 0 else (0 if landed is None else landed + 1)
    )
    log_start = _log_start(consumer, tp)
    missing = f"{first_missing}..{log_start - 1}" if log_start > 0 else f"from {first_missing}"
    gap = (
        f"{tp}: offsets {missing} are no longer in Kafka (retention deleted them before they were "
        f"landed); Kafka now starts at {log_start}: {record.error()}"
    )
    metrics.EXPIRED_OFFSETS.inc()
    log_event("offset_expired", logging.ERROR, detail=gap, policy=policy)
    event_log.record(Event("offset_expired", message=gap))
    if policy == "fail":
        return OffsetExpiredError(f"{gap}; set on_expired_offset=earliest to accept the gap and go on")
    # librdkafka refuses seek() on a partition whose offset reset failed (_STATE): assign anew.
    consumer.assign(ownership.resume_points(consumer, tp, log_start if log_start >= 0 else OFFSET_BEGINNING))
    return None
