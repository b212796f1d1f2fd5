"""Writer choice, measured: the same decoded Arrow batches written to Delta by delta-rs and by Spark.

    python -m bench.writer_choice [--rows 200000] [--batch 50000]

Events of mixed schema versions (v1, v2, v3) are framed with ids from the local registry and
decoded by the service's own decoder into bronze-shaped Arrow tables (untimed). Then each
writer appends the same batches to a Delta table of its own, one commit per batch:

* delta-rs: the service's path, ``BronzeWriter.write_files`` + fenced ``commit`` carrying the
  per-partition offsets (app transactions) in the same commit;
* Spark: ``createDataFrame(arrow table)`` + ``write.format("delta").mode("append")``
  partitioned by ``event_date``, in the project's local session (``ingest.core.spark.session``).

Both tables are created and warmed up with one small batch first, so table creation and JVM
start-up are not counted. Rows/s per writer are printed and appended, with machine, date and
settings, to bench/results/writer_choice.md. Needs the local registry (``make stack-up``).
"""

from __future__ import annotations

import argparse
import datetime as dt
import os
import platform
import tempfile
import time
import uuid
from dataclasses import dataclass, field
from pathlib import Path

import pyarrow as pa
import pyarrow.compute as pc
from confluent_kafka.serialization import MessageField, SerializationContext
from gamelake_dev.demo_schemas import load_version
from gamelake_dev.producer.datagen import EventGenerator
from gamelake_dev.producer.publish import register_versions

from ingest.core.settings.endpoints import DEFAULT_BOOTSTRAP_SERVERS, DEFAULT_REGISTRY_URL, Endpoints
from ingest.core.settings.ingest_settings import load_settings
from ingest.core.settings.paths import PROJECT_DIR
from ingest.landing.decode.decoder import Decoder
from ingest.landing.decode.schema_registry import SchemaRegistryClient
from ingest.landing.delta.bronze_writer import BronzeWriter
from ingest.landing.delta.fences import Landing
from ingest.landing.records import TopicPartition

RESULTS = PROJECT_DIR / "bench" / "results" / "writer_choice.md"
VERSIONS = [1, 2, 3]
PARTITIONS = 6
GAMES = ["space_raiders", "kart_legends", "puzzle_pop"]


@dataclass
class Record:
    """A Kafka record as the decoder reads it (the KafkaRecord protocol)."""

    _topic: str
    _partition: int
    _offset: int
    _key: bytes
    _value: bytes
    _timestamp_ms: int
    _headers: list = field(default_factory=list)

    def topic(self) -> str:
        return self._topic

    def partition(self) -> int:
        return self._partition

    def offset(self) -> int:
        return self._offset

    def timestamp(self) -> tuple[int, int]:
        return (1, self._timestamp_ms)

    def key(self) -> bytes:
        return self._key

    def value(self) -> bytes:
        return self._value

    def headers(self) -> list:
        return self._headers


def decoded_batches(registry_url: str, rows: int, batch: int, scratch: Path) -> list[pa.Table]:
    """``rows`` mixed-version events, framed with registry ids and decoded by the service's decoder."""
    topic = f"bench-writer-{uuid.uuid4().hex[:8]}"
    serializers = register_versions(Endpoints(DEFAULT_BOOTSTRAP_SERVERS, registry_url, topic), VERSIONS)
    ctx = SerializationContext(topic, MessageField.VALUE)
    classes = {v: load_version(v) for v in VERSIONS}
    now_ms = int(time.time() * 1000)
    records = []
    for n, event in enumerate(EventGenerator(GAMES, VERSIONS, seed=7).events(rows)):
        version = classes[event.version]
        value = serializers[event.version](version.message_class(**event.fields(version.field_names)), ctx)
        assert value is not None
        partition = n % PARTITIONS
        records.append(Record(topic, partition, n // PARTITIONS, event.gamer_id.encode(), value, now_ms))
    settings = load_settings(registry_url=registry_url, warehouse_dir=scratch)
    decoder = Decoder(SchemaRegistryClient(settings), 0, 0.1)
    writer = BronzeWriter(scratch / "decode-schema", "bench")
    tables = []
    for start in range(0, rows, batch):
        decoded = decoder.decode(records[start : start + batch], writer.columns())
        assert decoded.table is not None and not decoded.dead_letters, decoded.dead_letters[:1]
        writer.evolve(decoded.new_columns, decoded.field_numbers)
        tables.append(decoded.table)
    # One bronze schema for every batch (older versions' columns as nulls), as bronze holds them.
    schema = pa.schema([f for f in tables[-1].schema])
    for t in tables:
        for f in t.schema:
            if f.name not in schema.names:
                schema = schema.append(f)
    return [_conform(t, schema) for t in tables]


def _conform(table: pa.Table, schema: pa.Schema) -> pa.Table:
    arrays = [
        table.column(f.name) if f.name in table.column_names else pa.nulls(table.num_rows, f.type)
        for f in schema
    ]
    return pa.Table.from_arrays(arrays, schema=schema)


def _landings(table: pa.Table, landed: dict[TopicPartition, int | None]) -> dict[TopicPartition, Landing]:
    """Per partition: the offset Delta holds and the batch's last offset (what the service commits)."""
    out = {}
    by_partition = table.group_by("_kafka_partition").aggregate([("_kafka_offset", "max")])
    topic = table.column("_kafka_topic")[0].as_py()
    for partition, last in zip(
        by_partition["_kafka_partition"].to_pylist(),
        by_partition["_kafka_offset_max"].to_pylist(),
        strict=True,
    ):
        tp = TopicPartition(topic, partition)
        out[tp] = Landing(landed.get(tp), last)
        landed[tp] = last
    return out


def bench_delta_rs(batches: list[pa.Table], warmup: pa.Table, path: Path) -> float:
    writer = BronzeWriter(path, "bench")
    landed: dict[TopicPartition, int | None] = {}
    _evolve(writer, warmup)
    writer.commit(writer.write_files(warmup), {}, {"warmup": "true"})
    started = time.perf_counter()
    for table in batches:
        writer.commit(writer.write_files(table), _landings(table, landed), {"bench": "delta-rs"})
    return time.perf_counter() - started


def _evolve(writer: BronzeWriter, table: pa.Table) -> None:
    """Add the decoded columns bronze lacks (the service does it from the decoder's new_columns)."""
    from deltalake import DeltaTable, Field

    have = set(writer.columns().columns)
    fresh = [Field.from_arrow(f) for f in table.schema if f.name not in have]
    if fresh:
        DeltaTable(str(writer.path)).alter.add_columns(fresh)


def bench_spark(batches: list[pa.Table], warmup: pa.Table, path: Path, warehouse: Path) -> float:
    from ingest.core.spark.session import local_session

    spark = local_session(warehouse)

    def append(table: pa.Table) -> None:
        now = pa.repeat(pa.scalar(int(time.time() * 1_000_000), pa.int64()), table.num_rows)
        with_time = table.append_column("_ingested_at", now.cast(pa.timestamp("us", tz="UTC")))
        frame = spark.createDataFrame(with_time)
        frame.write.format("delta").mode("append").partitionBy("event_date").save(str(path))

    append(warmup)
    started = time.perf_counter()
    for table in batches:
        append(table)
    elapsed = time.perf_counter() - started
    assert spark.read.format("delta").load(str(path)).count() == warmup.num_rows + sum(
        t.num_rows for t in batches
    )
    return elapsed


def main() -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--rows", type=int, default=200_000, help="rows written by each writer")
    parser.add_argument(
        "--batch", type=int, default=50_000, help="rows per commit (the service's flush_rows)"
    )
    parser.add_argument("--registry-url", default=os.environ.get("SCHEMA_REGISTRY_URL", DEFAULT_REGISTRY_URL))
    args = parser.parse_args()
    print(f"load average before: {_load()}")
    with tempfile.TemporaryDirectory(prefix="gamelake-writer-bench-") as tmp:
        root = Path(tmp)
        batches = decoded_batches(args.registry_url, args.rows + 2_000, args.batch, root)
        warmup, batches = batches[-1].slice(0, 2_000), batches[:-1]
        if sum(t.num_rows for t in batches) > args.rows:
            batches[-1] = batches[-1].slice(
                0, batches[-1].num_rows - (sum(t.num_rows for t in batches) - args.rows)
            )
        rows = sum(t.num_rows for t in batches)
        delta_rs_s = bench_delta_rs(batches, warmup, root / "delta-rs" / "game_events")
        spark_s = bench_spark(batches, warmup, root / "spark" / "game_events", root / "spark-warehouse")
    result = {"delta-rs": rows / delta_rs_s, "spark": rows / spark_s}
    for name, rate in result.items():
        print(f"{name:9} {rate:12,.0f} rows/s")
    print(f"delta-rs / spark: {result['delta-rs'] / result['spark']:.1f}x")
    _record(rows, args.batch, len(batches), delta_rs_s, spark_s, batches[0])
    return 0


def _load() -> str:
    return " / ".join(f"{x:.1f}" for x in os.getloadavg())


def _record(rows: int, batch: int, commits: int, delta_rs_s: float, spark_s: float, sample: pa.Table) -> None:
    versions = sorted(set(pc.unique(sample["_schema_id"]).to_pylist()))
    new = not RESULTS.exists()
    with RESULTS.open("a") as out:
        if new:
            out.write(
                "# Writer choice: delta-rs vs Spark, same decoded batches\n\n"
                "Written by `python -m bench.writer_choice`; one section per run.\n"
            )
        out.write(
            f"\n## {dt.datetime.now(dt.UTC):%Y-%m-%d %H:%M} UTC\n\n"
            f"- machine: {platform.node()}, {platform.machine()}, {os.cpu_count()} cores, "
            f"Python {platform.python_version()}, load average {_load()} (other jobs share the machine)\n"
            f"- settings: {rows:,} rows of mixed versions (schema ids {versions}), {commits} commits of "
            f"{batch:,} rows, partitioned by event_date; Spark local[2], driver memory from "
            "GAMELAKE_SPARK_MEMORY (default 2g); warm-up batch excluded\n\n"
            "| writer | seconds | rows/s |\n|---|---:|---:|\n"
            f"| delta-rs (service path: write_files + fenced commit with offsets) | {delta_rs_s:.2f} | "
            f"{rows / delta_rs_s:,.0f} |\n"
            f"| Spark createDataFrame(arrow) + write.format(delta).mode(append) | {spark_s:.2f} | "
            f"{rows / spark_s:,.0f} |\n\n"
            f"delta-rs is {spark_s / delta_rs_s:.1f}x Spark here.\n"
        )


if __name__ == "__main__":
    raise SystemExit(main())
