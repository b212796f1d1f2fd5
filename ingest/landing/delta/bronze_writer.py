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
import json
import time
from collections.abc import Sequence
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
from deltalake import (
    CommitProperties,
    DeltaTable,
    Field,
    PostCommitHookProperties,
    Transaction,
    write_deltalake,
)
from deltalake.exceptions import CommitFailedError
from deltalake.transaction import AddAction

from ingest.core.errors import IngestError
from ingest.landing import crash_points as hooks
from ingest.landing.decode.bronze_columns import (
    FIELD_NUMBERS_PREFIX,
    KAFKA_COLUMNS,
    PARTITION_COLUMN,
    RESERVED_NAMES,
    TIMESTAMP,
)
from ingest.landing.decode.schema_guard import KnownColumn, KnownColumns
from ingest.landing.delta.bronze_format import JSON_ERA_COLUMNS, TYPED_COLUMNS, refuse_json_era
from ingest.landing.delta.fences import Fence, FencedError, Landing
from ingest.landing.delta.local_delta_log import LocalDeltaLog, why_not
from ingest.landing.delta.log_state import LogState
from ingest.landing.delta.table_properties import with_properties
from ingest.landing.delta.tables import ensure_table, usable_folder, write_part
from ingest.landing.records import FieldNumbers, TopicPartition, txn_app_id

# The service's upkeep child checkpoints bronze and cleans its log (ingest/landing/upkeep/table_upkeep.py), so
# commits write no checkpoint of their own; the interval is for other engines that write.
# Silver reads bronze by commit version through the change data feed (table_changes): what is
# new is decided by the Delta log, not by clocks. Appends need no change files to be read so.
CHANGE_DATA_FEED = {"delta.enableChangeDataFeed": "true"}
_COMMIT_ATTEMPTS = 20


class BronzeWriter:
    def __init__(self, path: Path, app_id: str) -> None:
        self.path = path
        self.app_id = app_id
        self.delta_log = LocalDeltaLog(path)
        self._handle: DeltaTable | None = None  # held only while commits go through delta-rs
        usable_folder(path, "game_events")
        if not DeltaTable.is_deltatable(str(path)):
            base = pa.schema([*KAFKA_COLUMNS, pa.field(PARTITION_COLUMN, pa.date32())])
            ensure_table(path, base, [PARTITION_COLUMN], "game_events", CHANGE_DATA_FEED)
        self.state = LogState.load(path)
        self._not_blind = self._why_not_blind()
        self._check_format()  # before any commit: a refused bronze is left as it was
        # Not TABLE_CONFIGURATION: the upkeep sets the log retention the settings ask for.
        self._set_properties(CHANGE_DATA_FEED)
        # A bronze created before a service column existed (``_message_type``) gets it now,
        # in a metadata commit of its own; its older rows read null.
        self._add_fields(list(KAFKA_COLUMNS))

    def _why_not_blind(self) -> str | None:
        return why_not(self.state) or self.delta_log.refused

    def _check_format(self) -> None:
        """Refuse a bronze from before native types (bronze_format.py), before any commit."""
        refuse_json_era(self.path, self.state.configuration, _field_column_names(self.state.arrow_schema()))

    def _set_properties(self, properties: dict[str, str]) -> None:
        current = self._latest().configuration
        if any(current.get(key) != value for key, value in properties.items()):
            with_properties(self._delta_rs(), properties)
            self._latest()

    def _latest(self) -> LogState:
        """The state at the newest version: a look at the next version's name and a ``stat`` of
        ``_last_checkpoint`` when nobody else committed. The commits after the state first, then
        the check for commits the log cleanup removed unread (a writer idle past the retention):
        in that order, one removed while ``advance`` read those before it is caught too, and no
        blind append can take a cleaned-up version's name."""
        moved = self.state.advance()
        if self.state.behind_checkpoint():
            self.state = LogState.load(self.path)
        elif not moved:
            return self.state
        self._not_blind = self._why_not_blind()
        return self.state

    def _delta_rs(self) -> DeltaTable:
        """A delta-rs handle at the newest version, for what only delta-rs does: schema and
        property changes, and commits to a table with features a blind append does not honour.
        It holds the table's files, so a blind append lets it go (``_commit_next``)."""
        if self._handle is None:
            self._handle = DeltaTable(str(self.path))
        else:
            self._handle.update_incremental()
        return self._handle

    def snapshot(self) -> DeltaTable:
        """The table at the newest version this writer knows, which ``commit`` follows."""
        return DeltaTable(str(self.path), version=self._latest().version)

    def columns(self) -> KnownColumns:
        """The columns bronze has now, and the field numbers of each message type it landed."""
        state = self._latest()
        known = {f.name: KnownColumn(f.name, f.type) for f in state.arrow_schema()}
        return KnownColumns(known, _field_numbers(state.configuration))

    def evolve(self, columns: list[pa.Field], numbers: FieldNumbers) -> None:
        """Schema evolution, in commits of their own before the rows: new nullable columns, structs
        widened with their new fields, then the field numbers of the message types in ``numbers``
        (merged with what bronze holds).

        Another writer evolving bronze at the same time (a replay beside the service, two
        replays) makes a step fail with "metadata changed"; each step reads bronze again and
        changes only what is still missing, so the whole is retried.
        """
        for _ in range(_COMMIT_ATTEMPTS):
            try:
                self._evolve_once(columns, numbers)
                return
            except CommitFailedError:
                continue  # another writer changed the schema or properties since we read them
        raise IngestError(
            f"could not evolve {self.path} after {_COMMIT_ATTEMPTS} attempts (heavy contention)"
        )

    def _evolve_once(self, columns: list[pa.Field], numbers: FieldNumbers) -> None:
        state = self._latest()
        properties = {}
        if numbers:
            held = _field_numbers(state.configuration)
            properties = {
                FIELD_NUMBERS_PREFIX + name: json.dumps({**held.get(name, {}), **fields}, sort_keys=True)
                for name, fields in numbers.items()
            }
        # A new bronze says it has native types before its first field column, so no crash can
        # leave it looking old.
        if JSON_ERA_COLUMNS not in state.configuration and not _field_column_names(state.arrow_schema()):
            properties.update(TYPED_COLUMNS)
        if properties:
            self._set_properties(properties)
        latest = {c.name: c for c in columns}  # a column widened twice in a batch: its last type
        self._add_fields(list(latest.values()))
        self._widen(list(latest.values()))

    def _add_fields(self, fields: list[pa.Field]) -> None:
        existing = set(self._latest().arrow_schema().names)
        fresh = [Field.from_arrow(f) for f in fields if f.name not in existing]
        if fresh:
            self._delta_rs().alter.add_columns(fresh)
            self._latest()

    def _widen(self, fields: list[pa.Field]) -> None:
        """Give existing columns the wider types of ``fields`` (structs that gained fields, at any
        depth): one empty append that merges the schema, a metadata-only commit."""
        schema = self._latest().arrow_schema()
        wider = {f.name: f for f in fields if f.name in schema.names and f.type != schema.field(f.name).type}
        if not wider:
            return
        merged = pa.schema([wider.get(f.name, f) for f in schema])
        write_deltalake(
            self._delta_rs(),
            merged.empty_table(),
            mode="append",
            schema_mode="merge",
            partition_by=[PARTITION_COLUMN],
        )
        self._latest()

    def landed(self, tp: TopicPartition) -> int | None:
        """The last offset of ``tp`` stored in Delta, or None."""
        return self._latest().txns.get(txn_app_id(self.app_id, tp))

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
            adds.append(write_part(self.path, value, part, now_ms))
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
                self._latest()
            try:
                self._refuse_if_moved(landings, fences)
            except FencedError:
                if attempt == 0:
                    continue  # maybe only what we knew is behind: judge on the newest version
                raise
            version = self._commit_next(adds, txns, metadata)
            if version is not None:
                return version
        raise IngestError(
            f"could not commit to {self.path} after {_COMMIT_ATTEMPTS} attempts (heavy contention)"
        )

    def _commit_next(
        self, adds: Sequence[AddAction], txns: list[Transaction], metadata: dict[str, str]
    ) -> int | None:
        """Commit as the version after the newest we know; None when another writer took it."""
        version = self.state.version + 1
        if self._not_blind is None:
            self._handle = None
            if self.delta_log.append(version, adds, txns, metadata, [PARTITION_COLUMN]):
                self.state.committed(version, {t.app_id: t.version for t in txns})
                return version
            self._not_blind = self.delta_log.refused  # why_not held: only a refused link is new
            return None
        table = self._delta_rs()
        if table.version() != self.state.version:
            return None  # a commit by someone else since the offsets were checked
        try:
            table.create_write_transaction(
                list(adds),
                "append",
                table.schema(),
                partition_by=[PARTITION_COLUMN],
                commit_properties=CommitProperties(
                    custom_metadata=metadata, max_commit_retries=0, app_transactions=txns
                ),
                post_commithook_properties=PostCommitHookProperties(
                    create_checkpoint=False, cleanup_expired_logs=False
                ),
            )
        except CommitFailedError:
            return None
        self.state.advance()
        return version

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


def _field_column_names(schema: pa.Schema) -> list[str]:
    """Bronze's columns of decoded fields (not the service's own), sorted."""
    return sorted(n for n in schema.names if n not in RESERVED_NAMES)


def _field_numbers(configuration: dict[str, str]) -> FieldNumbers:
    """The field numbers per message type, from bronze's table properties."""
    return {
        key.removeprefix(FIELD_NUMBERS_PREFIX): json.loads(value)
        for key, value in configuration.items()
        if key.startswith(FIELD_NUMBERS_PREFIX)
    }


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
