"""The consumer group's rebalance callbacks: seek to Delta on assign, land or drop on revoke."""

from __future__ import annotations

import json
from collections.abc import Callable

from confluent_kafka import Consumer
from confluent_kafka import TopicPartition as KafkaTopicPartition

from ingest.core.logs.json_log import log_event
from ingest.core.metrics.prometheus import DropReason
from ingest.landing.kafka.ownership import PartitionOwnership, tp_of
from ingest.landing.side_tables.event_log import Event, EventLog


class RebalanceHandler:
    """``on_assign``, ``on_revoke`` and ``on_lost`` for ``Consumer.subscribe``.

    ``land_open_batch`` commits what is buffered (we still own the partitions during a
    revoke); ``drop_open_batch`` forgets it (a lost partition may already be someone else's).
    """

    def __init__(
        self,
        ownership: PartitionOwnership,
        event_log: EventLog,
        instance_id: str,
        land_open_batch: Callable[[], None],
        drop_open_batch: Callable[[DropReason], None],
    ) -> None:
        self.ownership = ownership
        self.event_log = event_log
        self.instance_id = instance_id
        self.land_open_batch = land_open_batch
        self.drop_open_batch = drop_open_batch

    def on_assign(self, consumer: Consumer, partitions: list[KafkaTopicPartition]) -> None:
        """Seek every assigned partition to the offset Delta holds; the earliest if it never landed.

        Never 'latest'. A Delta offset that fell out of retention makes the fetch fail with
        _AUTO_OFFSET_RESET (auto.offset.reset=error), handled loudly in expired_offsets.py.
        """
        self.ownership.take(partitions)
        consumer.assign(partitions)
        starts = {str(tp_of(p)): p.offset for p in partitions}
        log_event("assigned", instance=self.instance_id, start_offsets=starts)
        self.event_log.record(Event("assigned", message=json.dumps(starts)))

    def on_revoke(self, _consumer: Consumer, partitions: list[KafkaTopicPartition]) -> None:
        self.land_open_batch()
        self.ownership.release(partitions)
        self.event_log.record(Event("revoked", message=", ".join(str(tp_of(p)) for p in partitions)))

    def on_lost(self, _consumer: Consumer, partitions: list[KafkaTopicPartition]) -> None:
        self.drop_open_batch(DropReason.PARTITIONS_LOST)
        self.ownership.release(partitions)
