"""``ingest dlq list|replay``: look at dead letters and re-land chosen ones after a fix.

Replay reads the raw bytes from ``bronze/dead_letters``, decodes them with today's registry and
bronze schema, and lands in bronze only the records whose Kafka coordinates
(topic, partition, offset) bronze does not hold yet; then it stamps ``replayed_at``. Running
it twice, or after a crash half-way, never duplicates a row. It works beside a running service
(its commits carry no offsets, so they never fence or move the service's).
"""

from __future__ import annotations

import argparse
import json
from collections import Counter
from dataclasses import dataclass
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.dataset as ds
from deltalake import DeltaTable

from ingest.decode import Decoder
from ingest.errors import ConfigError
from ingest.registry import RegistryClient
from ingest.settings import IngestSettings
from ingest.writer import BronzeWriter


@dataclass(frozen=True)
class StoredRecord:
    """A dead letter as a Kafka record (the decoder's KafkaRecord protocol)."""

    row: dict[str, Any]

    def topic(self) -> str:
        return str(self.row["_kafka_topic"])

    def partition(self) -> int:
        return int(self.row["_kafka_partition"])

    def offset(self) -> int:
        return int(self.row["_kafka_offset"])

    def timestamp(self) -> tuple[int, int]:
        ts = self.row["_kafka_timestamp"]
        return (1, int(ts.timestamp() * 1000) if ts is not None else 0)

    def key(self) -> bytes | None:
        key = self.row["_kafka_key"]
        return bytes(key) if key is not None else None

    def value(self) -> bytes | None:
        value = self.row["value"]
        return bytes(value) if value is not None else None

    def headers(self) -> list[tuple[str, bytes | None]]:
        return [(h["key"], h["value"]) for h in self.row["_kafka_headers"] or []]


def select(
    settings: IngestSettings, stage: str | None, topic: str | None, offsets: list[int] | None
) -> pa.Table:
    path = settings.dead_letters_path
    if not DeltaTable.is_deltatable(str(path)):
        raise ConfigError(f"there is no dead-letter table at {path}")
    table = DeltaTable(str(path)).to_pyarrow_table()
    mask = pc.is_null(table["replayed_at"])
    if stage:
        mask = pc.and_(mask, pc.equal(table["stage"], stage))
    if topic:
        mask = pc.and_(mask, pc.equal(table["_kafka_topic"], topic))
    if offsets:
        mask = pc.and_(mask, pc.is_in(table["_kafka_offset"], pa.array(offsets, pa.int64())))
    return table.filter(mask)


def _already_in_bronze(
    settings: IngestSettings, coordinates: set[tuple[str, int, int]]
) -> set[tuple[str, int, int]]:
    if not coordinates or not DeltaTable.is_deltatable(str(settings.bronze_path)):
        return set()
    offsets = pa.array(sorted({o for _, _, o in coordinates}), pa.int64())
    found = (
        DeltaTable(str(settings.bronze_path))
        .to_pyarrow_dataset()
        .to_table(
            columns=["_kafka_topic", "_kafka_partition", "_kafka_offset"],
            filter=ds.field("_kafka_offset").isin(offsets),
        )
    )
    rows = zip(
        found["_kafka_topic"].to_pylist(),
        found["_kafka_partition"].to_pylist(),
        found["_kafka_offset"].to_pylist(),
        strict=True,
    )
    return {r for r in rows if r in coordinates}


def replay(settings: IngestSettings, letters: pa.Table, dry_run: bool = False) -> dict[str, Any]:
    """Re-land ``letters``; returns counts of landed, already-present and still-failing records."""
    records = [StoredRecord(row) for row in letters.to_pylist()]
    writer = BronzeWriter(settings.bronze_path, settings.app_id)
    decoder = Decoder(
        RegistryClient(settings), settings.unknown_schema_retries, settings.registry_retry_backoff_s
    )
    decoded = decoder.decode(records, writer.columns())
    failing = Counter(d.error.stage for d in decoded.dead_letters)
    failed_ids = {
        (d.record.topic() or "", d.record.partition() or 0, d.record.offset() or 0)
        for d in decoded.dead_letters
    }
    ok = {(r.topic(), r.partition(), r.offset()) for r in records} - failed_ids
    present = _already_in_bronze(settings, ok)
    result = {
        "selected": len(records),
        "landed": len(ok - present),
        "already_in_bronze": len(present),
        "still_failing": dict(failing),
    }
    if dry_run or not ok:
        return result
    table = decoded.table
    assert table is not None
    if present:
        keys = [f"{t}:{p}:{o}" for t, p, o in present]
        coordinate = pc.binary_join_element_wise(
            table["_kafka_topic"],
            table["_kafka_partition"].cast(pa.string()),
            table["_kafka_offset"].cast(pa.string()),
            ":",
        )
        table = table.filter(pc.invert(pc.is_in(coordinate, pa.array(keys))))
    if table.num_rows:
        writer.add_columns(decoded.new_columns)
        writer.commit(writer.write_files(table), {}, {"replay": "dead_letters"})
    ids = ", ".join(f"'{t}:{p}:{o}'" for t, p, o in sorted(ok))
    DeltaTable(str(settings.dead_letters_path)).update(
        updates={"replayed_at": "now()"}, predicate=f"dead_letter_id IN ({ids})"
    )
    return result


def _command(args: argparse.Namespace) -> int:
    from ingest.service import settings_from_args

    settings = settings_from_args(args)
    offsets = [int(o) for o in args.offsets.split(",")] if args.offsets else None
    letters = select(settings, args.stage, args.dlq_topic, offsets)
    if args.verb == "list":
        for row in letters.select(["dead_letter_id", "stage", "error"]).to_pylist():
            print(f"{row['dead_letter_id']:40} {row['stage']:13} {row['error']}")
        print(f"{letters.num_rows} dead letters not replayed")
        return 0
    print(json.dumps(replay(settings, letters, args.dry_run)))
    return 0


def add_parser(subparsers: argparse._SubParsersAction) -> None:
    from ingest.service import add_settings_arguments

    parser = subparsers.add_parser(
        "dlq", help="list dead letters or replay them into bronze without duplicates"
    )
    parser.add_argument("verb", choices=["list", "replay"])
    add_settings_arguments(parser)
    parser.add_argument(
        "--stage", help="only this failed stage: framing, schema_lookup, decode, schema_guard"
    )
    parser.add_argument("--dlq-topic", help="only dead letters from this source topic")
    parser.add_argument("--offsets", help="only these offsets, comma-separated")
    parser.add_argument("--dry-run", action="store_true", help="decode and count, land nothing")
    parser.set_defaults(handler=_command)
