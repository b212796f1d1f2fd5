"""The bronze Delta writer: parquet files first, then one fenced commit with rows and offsets.

``write_files`` writes one parquet file per ``event_date`` of a batch. ``commit`` adds them in
a single Delta commit that also carries one app transaction per partition (its last offset).
The commit is optimistic and fenced: it checks the stored offsets at the newest version this
writer knows, refuses if any partition moved since this instance read it (another instance
landed it: we are a zombie), and commits exactly the next version (put-if-absent, no automatic
retries), so nobody can slip a commit in between the check and ours. A lost race is re-checked
on the newest version and retried with the same files. Writers other than the service (``ingest
dlq replay``) fence their commits the same way with app transactions of their own (``Fence``).

What the writer knows of the table is a ``LogState``: protocol, schema, properties and app
transactions, read from ``_delta_log`` without the table's files (a few MB however large the
table). Before each batch it looks for the next version's name and ``stat``s
``_last_checkpoint``, and reads commits only when someone else committed.
On a local disk it commits blind appends itself (``local_delta_log``): what a batch costs then
depends neither on ``_delta_log`` nor on the table's files. Schema changes, and commits to a
table with features a blind append does not honour, go through a delta-rs handle.
"""

from __future__ import annotations

import datetime as dt
import time
from collections.abc import Sequence
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
from deltalake import (
    DeltaTable,
    Transaction,
)
from deltalake.transaction import AddAction

from ingest.core.errors import IngestError
from ingest.landing import crash_points as hooks
from ingest.landing.decode.bronze_columns import (
    KAFKA_COLUMNS,
    PARTITION_COLUMN,
    TIMESTAMP,
)
from ingest.landing.decode.schema_guard import KnownColumns
from ingest.landing.delta import schema_evolution
from ingest.landing.delta.bronze_format import refuse_json_era
from ingest.landing.delta.bronze_log import BronzeLog
from ingest.landing.delta.fences import Fence, FencedError, Landing
from ingest.landing.delta.local_delta_log import LocalDeltaLog
from ingest.landing.delta.log_state import LogState
from ingest.landing.delta.object_delta_log import ObjectDeltaLog
from ingest.landing.delta.schema_evolution import add_fields, field_column_names, known_columns
from ingest.landing.delta.table_location import TableLocation, as_location
from ingest.landing.delta.tables import ensure_table, usable_folder, write_part
from ingest.landing.records import FieldNumbers, TopicPartition, txn_app_id

# The service's upkeep child checkpoints bronze and cleans its log (ingest/landing/upkeep/table_upkeep.py), so
# commits write no checkpoint of their own; the interval is for other engines that write.
# Silver reads bronze by commit version through the change data feed (table_changes): what is
# new is decided by the Delta log, not by clocks. Appends need no change files to be read so.
CHANGE_DATA_FEED = {"delta.enableChangeDataFeed": "true"}
_COMMIT_ATTEMPTS = 20


class BronzeWriter:
    def __init__(self, place: Path | TableLocation, app_id: str) -> None:
        self.location = as_location(place)
        self.path = self.location.uri
        self.app_id = app_id
        usable_folder(self.location, "game_events")
        if not self.location.is_delta_table():
            base = pa.schema([*KAFKA_COLUMNS, pa.field(PARTITION_COLUMN, pa.date32())])
            ensure_table(self.location, base, [PARTITION_COLUMN], "game_events", CHANGE_DATA_FEED)
        self.log = BronzeLog(self.location)
        # Before any commit: a refused bronze is left as it was.
        refuse_json_era(self.path, self.state.configuration, field_column_names(self.state.arrow_schema()))
        # Not TABLE_CONFIGURATION: the upkeep sets the log retention the settings ask for.
        self.log.set_properties(CHANGE_DATA_FEED)
        # A bronze created before a service column existed (``_message_type``) gets it now,
        # in a metadata commit of its own; its older rows read null.
        add_fields(self.log, list(KAFKA_COLUMNS))

    @property
    def state(self) -> LogState:
        """What this writer knows of bronze: the newest version it has seen."""
        return self.log.state

    @property
    def delta_log(self) -> LocalDeltaLog | ObjectDeltaLog:
        """Where blind appends go: a local ``_delta_log`` folder, or one on S3."""
        return self.log.delta_log

    def snapshot(self) -> DeltaTable:
        """The table at the newest version this writer knows, which ``commit`` follows."""
        return self.location.delta_table(version=self.log.latest().version)

    def columns(self) -> KnownColumns:
        """The columns bronze has now, and the field numbers of each message type it landed."""
        return known_columns(self.log.latest())

    def evolve(self, columns: list[pa.Field], numbers: FieldNumbers) -> None:
        """New columns, widened structs and field numbers, before the rows (schema_evolution.py)."""
        schema_evolution.evolve(self.log, columns, numbers)

    def landed(self, tp: TopicPartition) -> int | None:
        """The last offset of ``tp`` stored in Delta, or None."""
        return self.log.latest().txns.get(txn_app_id(self.app_id, tp))

    def write_files(self, table: pa.Table) -> list[AddAction]:
        """Write ``table`` as one parquet file per partition value; nothing is visible yet."""
        adds: list[AddAction] = []
        dates = table.column(PARTITION_COLUMN)
        now_us = int(time.time() * 1_000_000)
        ingested_at = pa.repeat(pa.scalar(now_us, pa.int64()), table.num_rows).cast(TIMESTAMP)
        data = table.drop_columns([PARTITION_COLUMN]).append_column(
            pa.field("_ingested_at", TIMESTAMP), ingested_at
        )
        now_ms = now_us // 1000
        for date, part in _split_by(data, dates):
            value = date.isoformat() if date is not None else None
            adds.append(write_part(self.location, value, part, now_ms))
        hooks.reach("files_written")
        return adds

    def commit(
        self,
        adds: Sequence[AddAction],
        landings: dict[TopicPartition, Landing],
        metadata: dict[str, str],
        fences: Sequence[Fence] = (),
    ) -> int:
        """Commit ``adds``, the new offsets and ``fences`` atomically; returns the new table version.

        Raises FencedError when any partition's stored offset is not the one we resumed from, or
        any fence's app transaction is not at the version it expects.
        """
        txns = [Transaction(txn_app_id(self.app_id, tp), landing.last) for tp, landing in landings.items()]
        txns += [Transaction(fence.app_id, fence.new) for fence in fences]
        for attempt in range(_COMMIT_ATTEMPTS):
            # The first attempt trusts the newest version this writer knows (the batch's
            # ``columns`` looked for commits by others). Sound either way: the commit can only be
            # the version after it, so a commit that landed since makes the check or the commit
            # fail, and the next attempt reads the table again.
            if attempt:
                self.log.latest()
            try:
                self._refuse_if_moved(landings, fences)
            except FencedError:
                if attempt == 0:
                    continue  # maybe only what we knew is behind: judge on the newest version
                raise
            version = self.log.commit_next(adds, txns, metadata)
            if version is not None:
                return version
        raise IngestError(
            f"could not commit to {self.path} after {_COMMIT_ATTEMPTS} attempts (heavy contention)"
        )

    def _refuse_if_moved(self, landings: dict[TopicPartition, Landing], fences: Sequence[Fence]) -> None:
        """FencedError unless every offset and fence is where this commit expects it.

        ``commit`` attempts exactly the version after the newest this writer knows, so what is
        checked here is what the commit lands on.
        """
        for tp, landing in landings.items():
            stored = self.state.txns.get(txn_app_id(self.app_id, tp))
            if stored != landing.expected:
                raise FencedError(
                    f"{tp}: Delta holds offset {stored}, this instance resumed from {landing.expected}; "
                    "another instance landed it, so this batch is dropped"
                )
        for fence in fences:
            stored = self.state.txns.get(fence.app_id)
            if stored != fence.expected:
                raise FencedError(
                    f"{fence.app_id}: Delta holds version {stored}, this commit expected {fence.expected}; "
                    "another writer committed under it first, so this commit is dropped"
                )


def _split_by(data: pa.Table, dates: pa.ChunkedArray) -> list[tuple[dt.date | None, pa.Table]]:
    """The rows of each distinct date (nulls too), in batch order within a date.

    One stable sort by the date's index and one ``take``, then zero-copy slices: a filter per
    date would read the whole batch once per date.
    """
    distinct = pc.unique(dates)
    if len(distinct) == 1:
        return [(distinct[0].as_py(), data)]
    codes = pc.index_in(dates, value_set=distinct).to_numpy(zero_copy_only=False)
    order = np.argsort(codes, kind="stable")
    counts = np.bincount(codes, minlength=len(distinct))
    ordered = data.take(pa.array(order))
    parts, start = [], 0
    for date, count in zip(distinct.to_pylist(), counts.tolist(), strict=True):
        parts.append((date, ordered.slice(start, count)))
        start += count
    return parts
