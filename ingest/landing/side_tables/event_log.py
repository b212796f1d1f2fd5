"""The ingest event log: one Delta row per commit and per notable event, like DLT's event log.

``kind`` is one of: start, assigned, revoked, commit, schema_evolved, fenced, stale_batch_dropped,
registry_unavailable, offset_expired, stop.

Commit rows are buffered and written together at most every ``flush_s`` seconds; every other
kind is written at once, with whatever is buffered. One event-log commit per bronze commit made
the event log the busiest table of all (a Delta commit and a small file per batch, 48 MB for
1,213 rows in 28 minutes), and its commit cost grew with its age. A crash loses at most the last
``flush_s`` of commit rows, which are only timings: each bronze commit carries its batch id in
its own commit metadata, and the offsets in its app transactions.
"""

from __future__ import annotations

import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

import pyarrow as pa
from deltalake import write_deltalake

from ingest.landing.decode.bronze_columns import TIMESTAMP
from ingest.landing.delta.kept_table import KeptTable
from ingest.landing.delta.table_location import TableLocation, as_location
from ingest.landing.delta.tables import ensure_table

PARTITION_RANGE = pa.struct(
    [
        pa.field("topic", pa.string()),
        pa.field("partition", pa.int32()),
        pa.field("first_offset", pa.int64()),
        pa.field("last_offset", pa.int64()),
        pa.field("rows", pa.int64()),
        pa.field("dead_letters", pa.int64()),
    ]
)
EVENT_LOG_SCHEMA = pa.schema(
    [
        pa.field("event_id", pa.string()),
        pa.field("logged_at", TIMESTAMP),
        pa.field("instance_id", pa.string()),
        pa.field("kind", pa.string()),
        pa.field("batch_id", pa.string()),
        pa.field("bronze_version", pa.int64()),
        pa.field("partitions", pa.list_(PARTITION_RANGE)),
        pa.field("rows", pa.int64()),
        pa.field("dead_letters", pa.int64()),
        pa.field("schema_ids", pa.list_(pa.int32())),
        pa.field("decode_ms", pa.float64()),
        pa.field("write_ms", pa.float64()),
        pa.field("commit_ms", pa.float64()),
        pa.field("total_ms", pa.float64()),
        pa.field("message", pa.string()),
    ]
)


@dataclass
class Event:
    kind: str
    batch_id: str | None = None
    bronze_version: int | None = None
    partitions: list[dict[str, object]] = field(default_factory=list)
    rows: int = 0
    dead_letters: int = 0
    schema_ids: list[int] = field(default_factory=list)
    decode_ms: float | None = None
    write_ms: float | None = None
    commit_ms: float | None = None
    total_ms: float | None = None
    message: str | None = None


class EventLog:
    def __init__(
        self,
        path: Path | TableLocation,
        instance_id: str,
        flush_s: float = 0.0,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.path = path
        self.instance_id = instance_id
        self.flush_s = flush_s
        self.clock = clock
        ensure_table(path, EVENT_LOG_SCHEMA, None, "ingest_event_log")
        self.kept = KeptTable(as_location(path))
        self.pending: list[dict[str, object]] = []
        self.last_flush = clock()

    def record(self, *events: Event) -> None:
        now_us = int(time.time() * 1_000_000)
        self.pending.extend(
            {**e.__dict__, "event_id": uuid.uuid4().hex, "logged_at": now_us, "instance_id": self.instance_id}
            for e in events
        )
        if any(e.kind != "commit" for e in events):
            self.flush()
        else:
            self.flush_if_due()

    def flush_if_due(self) -> None:
        if self.clock() - self.last_flush >= self.flush_s:
            self.flush()

    def flush(self) -> None:
        """Write the buffered rows in one commit (none when nothing is buffered)."""
        self.last_flush = self.clock()
        if self.pending:
            rows, self.pending = self.pending, []
            # The upkeep child may have changed the table's properties (its first run does): an
            # append from the old snapshot would be refused ("Metadata changed") every time after.
            table = self.kept.table
            table.update_incremental()
            write_deltalake(table, pa.Table.from_pylist(rows, schema=EVENT_LOG_SCHEMA), mode="append")
