"""Consumer lag per owned partition (a metric), and whether this instance has caught up."""

from __future__ import annotations

from confluent_kafka import Consumer, KafkaException
from confluent_kafka import TopicPartition as KafkaTopicPartition

from ingest.core import metrics
from ingest.landing.ownership import PartitionOwnership


def caught_up(consumer: Consumer, ownership: PartitionOwnership) -> bool:
    """Update the lag gauges; True when every owned partition's landed offset reached its end."""
    done = True
    for tp, landed in list(ownership.landed_offsets.items()):
        ktp = KafkaTopicPartition(tp.topic, tp.partition)
        try:
            # The fetcher's cached watermarks are fresh while we consume; ask the broker otherwise.
            low, high = consumer.get_watermark_offsets(ktp, cached=True)
            if low < 0 or high < 0:
                low, high = consumer.get_watermark_offsets(ktp, timeout=5, cached=False)
        except KafkaException:
            return False
        landed_next = low if landed is None else landed + 1
        metrics.LAG.labels(tp.topic, str(tp.partition)).set(max(0, high - landed_next))
        if landed_next < high:
            position = consumer.position([ktp])[0].offset
            done &= position >= high  # only control records (transaction markers) remain
    return done
