"""Consumer lag per owned partition (a metric), its total, and whether this instance caught up."""

from __future__ import annotations

from dataclasses import dataclass

from confluent_kafka import Consumer, KafkaException
from confluent_kafka import TopicPartition as KafkaTopicPartition

from ingest.core.metrics import prometheus as metrics
from ingest.landing.kafka.ownership import PartitionOwnership


@dataclass(frozen=True)
class Lag:
    remaining: int  # offsets not landed yet, over every owned partition
    caught_up: bool  # every owned partition landed to its end (transaction markers aside)


def measure_lag(consumer: Consumer, ownership: PartitionOwnership) -> Lag | None:
    """Update the lag gauges; None when a partition's watermarks could not be read."""
    remaining, done = 0, True
    for tp, landed in list(ownership.landed_offsets.items()):
        ktp = KafkaTopicPartition(tp.topic, tp.partition)
        try:
            # The fetcher's cached watermarks are fresh while we consume; ask the broker otherwise.
            low, high = consumer.get_watermark_offsets(ktp, cached=True)
            if low < 0 or high < 0:
                low, high = consumer.get_watermark_offsets(ktp, timeout=5, cached=False)
        except KafkaException:
            return None
        landed_next = low if landed is None else landed + 1
        lag = max(0, high - landed_next)
        metrics.LAG.labels(tp.topic, str(tp.partition)).set(lag)
        remaining += lag
        if landed_next < high:
            position = consumer.position([ktp])[0].offset
            done &= position >= high  # only control records (transaction markers) remain
    return Lag(remaining, done)
