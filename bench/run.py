"""Ingest benchmark against the real local broker: sustained throughput and produce-to-visible freshness.

    python -m bench.run [--events 1200000] [--instances 2] [--rate 20000] [--seconds 20]

Throughput: pre-produce ``--events`` mixed v1/v2/v3 events to a 6-partition topic, then run
``--instances`` ingest processes in one group (partitions split between them, exactly-once on,
as in production) with ``--until-caught-up``; rows / (last commit - first assignment).
Freshness: one ingest process runs while events are produced at ``--rate`` per second; each
row's latency is (end of the Delta commit that made it visible) - (its Kafka timestamp).
Results are appended to bench/results/ingest.md with machine, date and settings.
"""

from __future__ import annotations

import argparse
import datetime as dt
import os
import platform
import resource
import signal
import subprocess
import sys
import tempfile
import time
import uuid
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

import pyarrow as pa
import pyarrow.compute as pc
from confluent_kafka import Producer
from deltalake import DeltaTable
from gamelake_dev.demo_schemas import load_version
from gamelake_dev.producer.datagen import EventGenerator
from gamelake_dev.producer.publish import ensure_topic, register_versions, schema_id_of

from ingest.core.settings.endpoints import Endpoints
from ingest.core.settings.object_storage import s3_access
from ingest.core.settings.paths import PROJECT_DIR
from ingest.landing.delta.table_scan import scan

RESULTS = PROJECT_DIR / "bench" / "results" / "ingest.md"
VERSIONS = [1, 2, 3]


def _payload_pool(endpoints: Endpoints, size: int = 3000) -> list[tuple[bytes, bytes]]:
    """Distinct serialized events (key, framed value), cycled by the producer."""
    return [(key, value) for key, value, *_ in _event_pool(endpoints, size)]


def _event_pool(endpoints: Endpoints, size: int = 3000) -> list[tuple[bytes, bytes, bytes, bytes]]:
    """Distinct serialized events: (key, framed value, the event_id inside the value, the event
    time inside it as its serialized google.protobuf.Timestamp)."""
    from confluent_kafka.serialization import MessageField, SerializationContext
    from google.protobuf.timestamp_pb2 import Timestamp

    serializers = register_versions(endpoints, VERSIONS)
    ctx = SerializationContext(endpoints.topic, MessageField.VALUE)
    pool = []
    for event in EventGenerator(["space_raiders", "kart_legends", "puzzle_pop"], VERSIONS, seed=99).events(
        size
    ):
        version = load_version(event.version)
        value = serializers[event.version](version.message_class(**event.fields(version.field_names)), ctx)
        assert value is not None and schema_id_of(value) > 0
        stamp = Timestamp(**event.fields(["event_timestamp"])["event_timestamp"]).SerializeToString()
        assert stamp in value
        pool.append((event.gamer_id.encode(), value, event.event_id.encode(), stamp))
    return pool


def _cycled(pool: Sequence[tuple[bytes, bytes]]) -> Callable[[int], tuple[bytes, bytes]]:
    return lambda i: pool[i % len(pool)]


def _produce(
    endpoints: Endpoints, payload: Callable[[int], tuple[bytes, bytes]], count: int, rate: float | None
) -> None:
    """``count`` messages, the i-th being ``payload(i)`` (key, value), at ``rate`` per second."""
    producer = Producer(
        {
            "bootstrap.servers": endpoints.bootstrap_servers,
            "enable.idempotence": True,
            "linger.ms": 5,
            "compression.type": "lz4",
            "queue.buffering.max.messages": 1_000_000,
        }
    )
    started = time.monotonic()
    for i in range(count):
        key, value = payload(i)
        while True:
            try:
                producer.produce(endpoints.topic, value=value, key=key)
                break
            except BufferError:
                producer.poll(0.05)
        if rate is not None and i % 200 == 0:
            producer.poll(0)
            ahead = i / rate - (time.monotonic() - started)
            if ahead > 0:
                time.sleep(ahead)
    producer.flush(120)


@dataclass(frozen=True)
class Lakehouse:
    """Where a run lands: a fresh local folder, or (with ``uri``) a fresh prefix on S3."""

    warehouse: Path
    uri: str | None = None

    @classmethod
    def fresh(cls, s3_bucket: str | None = None) -> Lakehouse:
        warehouse = Path(tempfile.mkdtemp(prefix="gamelake-bench-"))
        uri = f"s3://{s3_bucket}/bench-{uuid.uuid4().hex[:8]}" if s3_bucket else None
        return cls(warehouse, uri)

    def settings(self) -> dict[str, object]:
        return {"warehouse_uri": self.uri} if self.uri else {}

    def table(self, name: str) -> DeltaTable:
        if self.uri is None:
            return DeltaTable(str(self.warehouse / "bronze" / name))
        options = s3_access(self.uri).delta_rs_options()
        return DeltaTable(f"{self.uri}/bronze/{name}", storage_options=options)


def _env(endpoints: Endpoints, warehouse: Path, **settings: object) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("GAMELAKE_INGEST_")}
    env.update(
        {
            "GAMELAKE_INGEST_BOOTSTRAP_SERVERS": endpoints.bootstrap_servers,
            "GAMELAKE_INGEST_REGISTRY_URL": endpoints.registry_url,
            "GAMELAKE_INGEST_TOPICS": f'["{endpoints.topic}"]',
            "GAMELAKE_INGEST_GROUP_ID": f"bench-{endpoints.topic}",
            "GAMELAKE_INGEST_WAREHOUSE_DIR": str(warehouse),
            "GAMELAKE_INGEST_METRICS_PORT": "0",
            "GAMELAKE_INGEST_LOG_LEVEL": "WARNING",
        }
    )
    env.update({f"GAMELAKE_INGEST_{k.upper()}": str(v) for k, v in settings.items()})
    return env


def _service(env: dict[str, str], *args: str) -> subprocess.Popen[bytes]:
    return subprocess.Popen([sys.executable, "-m", "ingest.cli", "run", *args], env=env, cwd=PROJECT_DIR)


def _children_cpu_s() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def _load() -> float:
    """The 1-minute load average: colleagues' tests share these 2 cores, so every result says how busy."""
    return round(os.getloadavg()[0], 2)


def throughput(
    endpoints: Endpoints, events: int, instances: int, flush_rows: int, lake: Lakehouse | None = None
) -> dict[str, object]:
    ensure_topic(endpoints, 6)
    _produce(endpoints, _cycled(_payload_pool(endpoints)), events, rate=None)
    lake = lake or Lakehouse.fresh()
    env = _env(
        endpoints,
        lake.warehouse,
        flush_rows=flush_rows,
        flush_interval_s=5,
        compact_every_commits=0,
        **lake.settings(),
    )
    load_before = _load()
    cpu_before = _children_cpu_s()
    procs = [_service(env, "--until-caught-up") for _ in range(instances)]
    codes = [p.wait() for p in procs]
    cpu_s = _children_cpu_s() - cpu_before  # the ingest processes' user+system time, startup included
    assert codes == [0] * instances, codes
    log = scan(lake.table("ingest_event_log"))
    commits = log.filter(pc.equal(log["kind"], "commit"))
    assigned = log.filter(pc.equal(log["kind"], "assigned"))
    rows = pc.sum(commits["rows"]).as_py()
    last_commit = pc.max(commits["logged_at"]).as_py()
    span = (last_commit - pc.min(assigned["logged_at"]).as_py()).total_seconds()
    # Steady state: from the rebalance that gave every instance its partitions to the last commit
    # (before it, the first instance works alone while the others start).
    first_stop = pc.min(log.filter(pc.equal(log["kind"], "stop"))["logged_at"])
    split_at = pc.max(assigned.filter(pc.less(assigned["logged_at"], first_stop))["logged_at"]).as_py()
    steady = commits.filter(pc.greater(commits["logged_at"], pa.scalar(split_at, commits["logged_at"].type)))
    steady_rows = pc.sum(steady["rows"]).as_py() or 0
    steady_span = (last_commit - split_at).total_seconds()
    landed = lake.table("game_events").count()
    assert rows == landed == events, (rows, landed, events)
    return {
        "events": events,
        "instances": instances,
        "seconds": round(span, 2),
        "events_per_s": round(rows / span),
        "steady_events_per_s": round(steady_rows / steady_span) if steady_span > 0 else None,
        "steady_rows": steady_rows,
        "commits": commits.num_rows,
        "ingest_cpu_s": round(cpu_s, 2),
        "events_per_cpu_s": round(rows / cpu_s),
        "load_avg_1m_before_after": [load_before, _load()],
        "mean_decode_ms": round(pc.mean(commits["decode_ms"]).as_py(), 1),
        "mean_write_ms": round(pc.mean(commits["write_ms"]).as_py(), 1),
        "mean_commit_ms": round(pc.mean(commits["commit_ms"]).as_py(), 1),
    }


def freshness(
    endpoints: Endpoints,
    rate: float,
    seconds: float,
    flush_interval_s: float,
    lake: Lakehouse | None = None,
    upkeep_every: int = 0,
) -> dict[str, object]:
    ensure_topic(endpoints, 6)
    pool = _payload_pool(endpoints)
    lake = lake or Lakehouse.fresh()
    env = _env(
        endpoints,
        lake.warehouse,
        flush_interval_s=flush_interval_s,
        flush_rows=100_000,
        compact_every_commits=upkeep_every,
        **lake.settings(),
    )
    load_before = _load()
    proc = _service(env)
    time.sleep(4)  # assignment
    _produce(endpoints, _cycled(pool), int(rate * seconds), rate=rate)
    time.sleep(3 * flush_interval_s + 2)
    proc.send_signal(signal.SIGTERM)
    assert proc.wait(timeout=60) == 0
    log = scan(lake.table("ingest_event_log"))
    commits = log.filter(pc.equal(log["kind"], "commit")).to_pylist()
    bronze = scan(lake.table("game_events"), ["_kafka_partition", "_kafka_offset", "_kafka_timestamp"])
    visible: dict[tuple[int, int], dt.datetime] = {}
    for commit in commits:
        for r in commit["partitions"]:
            for offset in range(r["first_offset"], r["last_offset"] + 1):
                visible[(r["partition"], offset)] = commit["logged_at"]
    latencies = sorted(
        (visible[(p, o)] - ts).total_seconds()
        for p, o, ts in zip(
            bronze["_kafka_partition"].to_pylist(),
            bronze["_kafka_offset"].to_pylist(),
            bronze["_kafka_timestamp"].to_pylist(),
            strict=True,
        )
    )
    n = len(latencies)
    return {
        "rate": rate,
        "events": n,
        "p50_s": round(latencies[n // 2], 3),
        "p99_s": round(latencies[int(n * 0.99)], 3),
        "max_s": round(latencies[-1], 3),
        "commits": len(commits),
        "flush_interval_s": flush_interval_s,
        "load_avg_1m_before_after": [load_before, _load()],
    }


def _record(results: Mapping[str, object], args: argparse.Namespace) -> None:
    cpu = platform.processor() or platform.machine()
    machine = f"{platform.node()} · {cpu} · {os.cpu_count()} cores · Python {platform.python_version()}"
    lines = [
        f"\n## {dt.datetime.now(dt.UTC):%Y-%m-%d %H:%M} UTC",
        f"- machine: {machine}",
        f"- settings: {vars(args)}",
        *(f"- {name}: {value}" for name, value in results.items()),
    ]
    RESULTS.parent.mkdir(parents=True, exist_ok=True)
    with open(RESULTS, "a") as out:
        out.write("\n".join(lines) + "\n")
    print("\n".join(lines))


def main() -> int:
    parser = argparse.ArgumentParser(prog="bench.run")
    parser.add_argument("--events", type=int, default=1_200_000)
    parser.add_argument("--instances", type=int, default=2)
    parser.add_argument("--flush-rows", type=int, default=100_000)
    parser.add_argument("--rate", type=float, default=20_000)
    parser.add_argument("--seconds", type=float, default=20)
    parser.add_argument("--flush-interval-s", type=float, default=0.5)
    args = parser.parse_args()
    base = Endpoints.from_env()
    results = {
        "throughput": throughput(
            Endpoints(base.bootstrap_servers, base.registry_url, f"bench-tp-{uuid.uuid4().hex[:8]}"),
            args.events,
            args.instances,
            args.flush_rows,
        ),
        "freshness": freshness(
            Endpoints(base.bootstrap_servers, base.registry_url, f"bench-fr-{uuid.uuid4().hex[:8]}"),
            args.rate,
            args.seconds,
            args.flush_interval_s,
        ),
    }
    _record(results, args)
    return 0


if __name__ == "__main__":
    sys.exit(main())
