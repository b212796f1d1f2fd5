"""Landing one batch: decode, evolve bronze, write files and dead letters, one fenced Delta commit.

The order is the exactly-once argument of doc/DESIGN.md ("Why landing is exactly-once"):
nothing is visible before ``BronzeWriter.commit``, which adds the batch's files and moves its
partitions' offsets in one Delta commit, fenced against the offsets this instance resumed from.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Sequence
from dataclasses import dataclass

from ingest.core.contract import load_contract
from ingest.core.errors import IngestError
from ingest.core.logs.json_log import log_event
from ingest.core.metrics.prometheus import Stopwatch
from ingest.core.settings.ingest_settings import IngestSettings
from ingest.landing import crash_points
from ingest.landing.decode.bronze_columns import ROWS_KEY
from ingest.landing.decode.decoder import Decoder
from ingest.landing.delta.bronze_writer import BronzeWriter
from ingest.landing.delta.fences import Landing
from ingest.landing.kafka.ownership import PartitionOwnership
from ingest.landing.records import DecodedBatch, KafkaRecord, TopicPartition
from ingest.landing.service.batch import PartitionRange, partition_ranges
from ingest.landing.side_tables.dead_letters import DeadLetterSink, InDoubt, without_rows
from ingest.landing.side_tables.event_log import Event, EventLog


def staging_renames(new_columns: list[str], schema_ids: list[int]) -> str | None:
    """Say which new bronze columns staging renames (their name is a staging column already)."""
    contract = load_contract()
    renamed = {
        name: contract.passthrough_name(name)
        for name in new_columns
        if not contract.is_contract_bronze(name) and contract.passthrough_name(name) != name
    }
    if not renamed:
        return None
    pairs = ", ".join(f"{name} -> {alias}" for name, alias in renamed.items())
    return (
        f"new field(s) of schema id(s) {schema_ids} named like staging columns land in bronze as sent "
        f"and reach staging renamed: {pairs} (passthrough_prefix rule, ingest/core/bronze_contract.yml)"
    )


class StaleBatchError(IngestError):
    """The batch took so long that the group may have moved its partitions: drop, never commit."""


@dataclass(frozen=True)
class Timings:
    decode_ms: float
    write_ms: float
    commit_ms: float
    total_ms: float


@dataclass(frozen=True)
class LandedBatch:
    """What one Delta commit landed."""

    batch_id: str
    bronze_version: int
    ranges: dict[TopicPartition, PartitionRange]
    landings: dict[TopicPartition, Landing]
    decoded: DecodedBatch
    timings: Timings


class Lander:
    def __init__(
        self,
        settings: IngestSettings,
        writer: BronzeWriter,
        decoder: Decoder,
        dead_letters: DeadLetterSink,
        event_log: EventLog,
        instance_id: str,
    ) -> None:
        self.settings = settings
        self.writer = writer
        self.decoder = decoder
        self.dead_letters = dead_letters
        self.event_log = event_log
        self.instance_id = instance_id

    def land(
        self, batch_id: str, records: Sequence[KafkaRecord], ownership: PartitionOwnership, last_poll: float
    ) -> LandedBatch:
        """Land ``records``; FencedError, StaleBatchError or RegistryUnavailable mean nothing landed."""
        total = Stopwatch()
        decoded = self.decoder.decode(records, self.writer.columns())
        already = self._already_dead_lettered(ownership)
        if already:
            decoded = without_rows(decoded, already)
        decode_ms = total.ms()
        crash_points.reach("decoded")
        self._evolve(batch_id, decoded)
        write = Stopwatch()
        adds = self.writer.write_files(decoded.table) if decoded.table is not None else []
        ranges = partition_ranges(decoded)
        landings = ownership.landings({tp: r.last_offset for tp, r in ranges.items()})
        covers = {tp: lg.last for tp, lg in landings.items()}
        self.dead_letters.write(decoded.dead_letters, covers, batch_id, already)
        crash_points.reach("dead_letters_written")
        write_ms = write.ms()
        self._refuse_if_stale(last_poll)
        commit = Stopwatch()
        rows = decoded.table.num_rows if decoded.table is not None else 0
        metadata = {"batch_id": batch_id, "instance_id": self.instance_id, ROWS_KEY: str(rows)}
        version = self.writer.commit(adds, landings, metadata)
        commit_ms = commit.ms()
        crash_points.reach("delta_committed")
        timings = Timings(decode_ms, write_ms, commit_ms, total.ms())
        return LandedBatch(batch_id, version, ranges, landings, decoded, timings)

    def _already_dead_lettered(self, ownership: PartitionOwnership) -> InDoubt:
        """What a crashed batch dead-lettered above bronze's offsets: read once per assignment or drop."""
        if ownership.in_doubt is None:
            ownership.in_doubt = self.dead_letters.in_doubt(dict(ownership.landed_offsets))
        return {tp: offsets for tp, offsets in ownership.in_doubt.items() if offsets}

    def _evolve(self, batch_id: str, decoded: DecodedBatch) -> None:
        """New fields become new bronze columns, and the field numbers of message types new to
        bronze (or of their new fields) are recorded, in commits of their own before the rows."""
        if not decoded.new_columns and not decoded.field_numbers:
            return
        self.writer.evolve(decoded.new_columns, decoded.field_numbers)
        names = [c.name for c in decoded.new_columns]
        types = sorted(decoded.field_numbers)
        log_event("schema_evolved", batch_id=batch_id, new_columns=names, message_types=types)
        if not names:
            return
        self.event_log.record(Event("schema_evolved", batch_id=batch_id, message=", ".join(names)))
        if renamed := staging_renames(names, sorted(decoded.schema_ids)):
            log_event("staging_rename", logging.WARNING, batch_id=batch_id, detail=renamed)
            self.event_log.record(Event("schema_evolved", batch_id=batch_id, message=renamed))

    def _refuse_if_stale(self, last_poll: float) -> None:
        """Refuse a commit near max.poll.interval.ms: the group may have given our partitions away."""
        idle_s = time.monotonic() - last_poll
        limit = self.settings.max_poll_interval_ms
        if idle_s * 1000 >= 0.8 * limit:
            raise StaleBatchError(f"{idle_s:.1f} s since the last poll, max.poll.interval.ms={limit}")
