"""The ingest event log: one Delta row per commit and per notable event, like DLT's event log.

``kind`` is one of: start, assigned, revoked, commit, schema_evolved, fenced, stale_batch_dropped,
registry_unavailable, offset_expired, stop.
"""

from __future__ import annotations

import time
import uuid
from dataclasses import dataclass, field
from pathlib import Path

import pyarrow as pa
from deltalake import write_deltalake

from ingest.landing.bronze_columns import TIMESTAMP
from ingest.landing.bronze_writer import ensure_table

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
    def __init__(self, path: Path, instance_id: str) -> None:
        self.path = path
        self.instance_id = instance_id
        self.table = ensure_table(path, EVENT_LOG_SCHEMA, None, "ingest_event_log")

    def record(self, *events: Event) -> None:
        now_us = int(time.time() * 1_000_000)
        rows = [
            {
                **e.__dict__,
                "event_id": uuid.uuid4().hex,
                "logged_at": now_us,
                "instance_id": self.instance_id,
            }
            for e in events
        ]
        write_deltalake(self.table, pa.Table.from_pylist(rows, schema=EVENT_LOG_SCHEMA), mode="append")
