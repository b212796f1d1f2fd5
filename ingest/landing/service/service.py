"""The ingest service's loop: poll into a batch, land it when due, stop cleanly; ``ingest run``.

The loop only coordinates. Each step lives in a unit of its own: ``batch`` (what was polled),
``lander`` (decode, write, one fenced Delta commit), ``ownership`` and ``rebalance`` (which
partitions we own and their offsets in Delta), ``expired_offsets``, ``lag``, ``compaction``,
``commit_report`` and ``health``. A batch that cannot be committed safely (the instance was
fenced, outlived ``max.poll.interval.ms``, or the registry is unreachable) is dropped and the
owned partitions are re-seeked to the offsets Delta holds. doc/DESIGN.md has the argument.
"""

from __future__ import annotations

import logging
import os
import socket
import sys
import time
import uuid

from confluent_kafka import KafkaError, Message

from ingest.core.errors import IngestError
from ingest.core.logs.context import batch_context
from ingest.core.logs.json_log import log_event
from ingest.core.metrics import prometheus as metrics
from ingest.core.settings.ingest_settings import IngestSettings
from ingest.core.stop_signals import StopRequest, stop_on_signals
from ingest.landing.decode.decoder import Decoder
from ingest.landing.decode.schema_registry import RegistryUnavailable, SchemaRegistryClient
from ingest.landing.delta.bronze_writer import BronzeWriter
from ingest.landing.delta.fences import FencedError
from ingest.landing.delta.table_location import TableLocation
from ingest.landing.kafka.consumer import KafkaErrors, open_consumer
from ingest.landing.kafka.expired_offsets import handle_expired_offset
from ingest.landing.kafka.lag import measure_lag
from ingest.landing.kafka.offsets import mirror_to_kafka
from ingest.landing.kafka.ownership import PartitionOwnership
from ingest.landing.kafka.rebalance import RebalanceHandler
from ingest.landing.service.batch import Batch
from ingest.landing.service.commit_report import report_commit
from ingest.landing.service.health import health_report
from ingest.landing.service.lander import Lander, StaleBatchError
from ingest.landing.service.progress import CatchUpProgress
from ingest.landing.side_tables.dead_letters import make_sink
from ingest.landing.side_tables.event_log import Event, EventLog
from ingest.landing.upkeep.background import BackgroundUpkeep

UPKEEP_WAIT_S = 60.0  # on stop: let a running upkeep finish and report


class Service:
    """One ingest instance. ``run()`` returns when stopped, caught up (if asked) or failed."""

    def __init__(self, settings: IngestSettings, until_caught_up: bool = False) -> None:
        self.settings = settings
        self.until_caught_up = until_caught_up
        self.instance_id = f"{socket.gethostname()}-{os.getpid()}-{uuid.uuid4().hex[:6]}"
        registry = SchemaRegistryClient(settings)
        registry.check()
        metrics.REGISTRY_UP.set(1)
        writer = BronzeWriter(TableLocation.of(settings.landing_table("game_events")), settings.app_id)
        event_log = TableLocation.of(settings.landing_table("ingest_event_log"))
        self.event_log = EventLog(event_log, self.instance_id, settings.event_log_flush_s)
        decoder = Decoder(registry, settings.unknown_schema_retries, settings.registry_retry_backoff_s)
        self.lander = Lander(settings, writer, decoder, make_sink(settings), self.event_log, self.instance_id)
        self.upkeep = BackgroundUpkeep(
            [settings.landing_table(name) for name in ("game_events", "dead_letters", "ingest_event_log")],
            settings.compact_every_commits,
            settings.log_retention_hours,
            settings.vacuum_retention_hours,
        )
        self.kafka_errors = KafkaErrors()
        self.consumer = open_consumer(settings, self.kafka_errors)
        self.ownership = PartitionOwnership(writer)
        self.batch = Batch()
        self.last_poll = time.monotonic()
        self.stop = StopRequest()
        self.fatal: IngestError | None = None
        self.commits = 0
        self.progress = CatchUpProgress(sys.stderr if until_caught_up else None)

    def run(self) -> int:
        self.event_log.record(Event("start", message=self.settings.model_dump_json(exclude={"kafka"})))
        log_event(
            "start", instance=self.instance_id, topics=self.settings.topics, group=self.settings.group_id
        )
        rebalance = RebalanceHandler(self.ownership, self.event_log, self.instance_id, self.flush, self._drop)
        with stop_on_signals() as self.stop:
            try:
                self.consumer.subscribe(
                    self.settings.topics,
                    on_assign=rebalance.on_assign,
                    on_revoke=rebalance.on_revoke,
                    on_lost=rebalance.on_lost,
                )
                self._loop()
                if self.stop.is_set():
                    log_event("signal", signal=self.stop.reason, action="flush, commit and exit")
                self.flush()
            finally:
                self.progress.finish()
                self.consumer.close()
                self.event_log.flush()  # the buffered commit rows, even when stopping on an error
                self._report_upkeep(self.upkeep.reap(wait_s=UPKEEP_WAIT_S))
        self.event_log.record(Event("stop", message=f"{self.commits} commits"))
        log_event("stop", instance=self.instance_id, commits=self.commits)
        return 0

    def _loop(self) -> None:
        started, lag_checked = time.monotonic(), 0.0
        while not self.stop.is_set():
            idle = self._poll()
            if self.fatal is not None:
                raise self.fatal
            # A run to catch up lands its tail as soon as a poll comes back empty.
            if self.batch.is_due(self.settings) or (self.until_caught_up and idle):
                self.flush()
            # The lag gauges update busy or idle, so a backlog shows while it builds up.
            if time.monotonic() - lag_checked >= 1.0:
                lag_checked = time.monotonic()
                self.event_log.flush_if_due()
                done = self._caught_up(started)
                if done and idle and not len(self.batch) and self.until_caught_up:
                    return

    def _poll(self) -> bool:
        """Poll once into the batch; True when the poll came back empty."""
        room = max(1, self.settings.flush_rows - len(self.batch))
        records = self.consumer.consume(num_messages=min(room, 20_000), timeout=0.1)
        self.last_poll = time.monotonic()
        # Whole-list passes: errors are rare, so the common case touches each record twice in C.
        failed = [(r, err) for r in records if (err := r.error()) is not None]
        self.batch.add([r for r in records if r.error() is None] if failed else records)
        for record, err in failed:
            self._on_consume_error(record, err)
        self.fatal = self.fatal or self.kafka_errors.fatal
        return not records

    def _on_consume_error(self, record: Message, err: KafkaError) -> None:
        if err.code() == KafkaError._AUTO_OFFSET_RESET:
            policy = self.settings.on_expired_offset
            self.fatal = handle_expired_offset(record, self.consumer, self.ownership, policy, self.event_log)
        elif err.code() != KafkaError._PARTITION_EOF:
            log_event("consume_error", logging.WARNING, error=err.str())

    def _caught_up(self, started: float) -> bool:
        """Update the lag gauges; True when every owned partition is landed to its end."""
        if not self.ownership.landed_offsets:
            if self.until_caught_up and time.monotonic() - started > self.settings.caught_up_timeout_s:
                timeout = self.settings.caught_up_timeout_s
                raise IngestError(f"no partition was assigned within {timeout:.0f} s")
            return False
        lag = measure_lag(self.consumer, self.ownership)
        if lag is None:
            return False
        self.progress.show(lag.remaining)
        return lag.caught_up

    def _drop(self, reason: metrics.DropReason, detail: str = "") -> None:
        """Forget the uncommitted batch and rewind owned partitions to what Delta holds."""
        if len(self.batch):
            metrics.DROPPED_BATCHES.labels(reason).inc()
            log_event("batch_dropped", logging.WARNING, reason=reason, records=len(self.batch), detail=detail)
        self.batch.clear()
        self.ownership.rewind(self.consumer)

    def flush(self) -> None:
        """Land the open batch; a batch that cannot land safely is dropped and re-read from Kafka."""
        if not len(self.batch):
            return
        batch_id = f"{self.instance_id}-{self.commits}-{uuid.uuid4().hex[:6]}"
        with batch_context(batch_id):
            self._land(batch_id)

    def _land(self, batch_id: str) -> None:
        """``flush``'s work, inside the batch's log context (its id on every line it logs)."""
        records = self.batch.owned(self.ownership.owns) if self.ownership.shrank else self.batch.records
        try:
            landed = self.lander.land(batch_id, records, self.ownership, self.last_poll)  # type: ignore[arg-type]
        except (RegistryUnavailable, FencedError, StaleBatchError) as err:
            self._drop_unlandable(batch_id, err)
            return
        metrics.REGISTRY_UP.set(1)  # the batch's schemas were cached or the registry answered
        self.ownership.advance(landed.landings)
        mirror_to_kafka(self.consumer, {tp: lg.last for tp, lg in landed.landings.items()})
        self.batch.clear()
        self.commits += 1
        self.progress.count(len(records))
        report_commit(landed, self.event_log)
        self._report_upkeep(self.upkeep.after_commit(self.commits))

    def _drop_unlandable(self, batch_id: str, err: IngestError) -> None:
        kind, reason = {
            RegistryUnavailable: ("registry_unavailable", metrics.DropReason.REGISTRY_UNAVAILABLE),
            FencedError: ("fenced", metrics.DropReason.FENCED),
            StaleBatchError: ("stale_batch_dropped", metrics.DropReason.STALE),
        }[type(err)]
        self.event_log.record(Event(kind, batch_id=batch_id, message=str(err)))
        self._drop(reason, str(err))
        if isinstance(err, RegistryUnavailable):
            metrics.REGISTRY_UP.set(0)
            time.sleep(min(5.0, self.settings.registry_retry_backoff_s * 4))  # a moment before the re-read

    @staticmethod
    def _report_upkeep(result: dict[str, object] | None) -> None:
        if result is not None:
            log_event("compaction", result=result)

    def health(self) -> dict[str, object]:
        failed = self.fatal is not None or self.kafka_errors.fatal is not None
        return health_report(
            self.instance_id,
            failed,
            self.last_poll,
            self.settings.max_poll_interval_ms,
            self.ownership.landed_offsets,
            self.commits,
        )
