"""Kafka's side of status: each partition's watermarks, the offset bronze holds, and how old the
oldest message not landed yet is.

The landed offset is bronze's Delta app transaction (where offsets live), never the group's
committed offset. The age of the oldest unlanded message comes from fetching that one message
per lagging partition (assign at its offset, a short poll): cheap, and no group is joined.
"""

from __future__ import annotations

import time
import uuid
from typing import Any

from confluent_kafka import TIMESTAMP_NOT_AVAILABLE, Consumer, KafkaException
from confluent_kafka import TopicPartition as KafkaTopicPartition
from deltalake import DeltaTable

from ingest.core.errors import ConfigError
from ingest.core.settings.ingest_settings import IngestSettings
from ingest.landing.kafka.consumer import KafkaErrors, open_consumer
from ingest.landing.records import TopicPartition, txn_app_id
from ingest.ops.status.time_text import iso_utc

# The wait for one message per lagging partition, so status answers in about a second or two; a
# partition still silent then (a slow leader, only transaction markers left) has no age.
PEEK_TIMEOUT_S = 2.0


def _partition(
    consumer: Consumer, settings: IngestSettings, bronze: DeltaTable | None, topic: str, partition: int
) -> dict[str, Any]:
    low, high = consumer.get_watermark_offsets(KafkaTopicPartition(topic, partition), timeout=10)
    app = txn_app_id(settings.app_id, TopicPartition(topic, partition))
    landed = bronze.transaction_version(app) if bronze is not None else None
    next_offset = low if landed is None else max(low, landed + 1)
    return {
        "topic": topic,
        "partition": partition,
        "landed_offset": landed,
        "earliest": low,
        "high_watermark": high,
        "lag": max(0, high - next_offset),
        "expired_gap": landed is not None and landed + 1 < low,
        "ahead_of_end": landed is not None and landed >= high,
        "next_offset": next_offset,
    }


def _oldest_unlanded_ms(consumer: Consumer, rows: list[dict[str, Any]]) -> dict[tuple[str, int], int]:
    """The timestamp (ms) of the first message not landed yet, per lagging partition that answers."""
    lagging = [KafkaTopicPartition(r["topic"], r["partition"], r["next_offset"]) for r in rows if r["lag"]]
    if not lagging:
        return {}
    consumer.assign(lagging)
    found: dict[tuple[str, int], int] = {}
    deadline = time.monotonic() + PEEK_TIMEOUT_S
    while len(found) < len(lagging) and (left := deadline - time.monotonic()) > 0:
        for message in consumer.consume(len(lagging), timeout=min(left, 0.5)):
            kind, at_ms = message.timestamp()
            if message.error() is None and kind != TIMESTAMP_NOT_AVAILABLE:
                found.setdefault((message.topic() or "", message.partition() or 0), at_ms)
    return found


def _list_partitions(consumer: Consumer, settings: IngestSettings) -> list[tuple[str, int]]:
    metadata = consumer.list_topics(timeout=10)
    return [(t, p) for t in settings.topics for p in sorted(metadata.topics[t].partitions)]


def partitions(settings: IngestSettings, bronze: DeltaTable | None, now: float) -> list[dict[str, Any]]:
    """Every partition of the topics, with ``oldest_unlanded_at`` and its age at ``now``."""
    # a group of its own, never the service's; one message is all a peek reads. Opened as the
    # service opens its consumer: an unreachable or refusing cluster is one line, librdkafka's
    # own log goes through logging.
    own = {"group.id": f"{settings.group_id}-status-{uuid.uuid4().hex}", "queued.min.messages": 1}
    consumer = open_consumer(settings, KafkaErrors(), {**own, "enable.auto.commit": False})
    try:
        rows = [_partition(consumer, settings, bronze, t, p) for t, p in _list_partitions(consumer, settings)]
        oldest = _oldest_unlanded_ms(consumer, rows)
    except KafkaException as err:
        raise ConfigError(
            f"Kafka at {settings.bootstrap_servers} did not answer: {err.args[0].str()}"
        ) from None
    finally:
        consumer.close()
    for row in rows:
        at_ms = oldest.get((row["topic"], row["partition"]))
        row["oldest_unlanded_at"] = iso_utc(at_ms / 1000) if at_ms is not None else None
        row["unlanded_age_s"] = round(max(0.0, now - at_ms / 1000), 1) if at_ms is not None else None
    return rows
