"""Helpers for the ingest tests: run the service, read bronze back, re-read Kafka."""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import time
import uuid
from collections import Counter
from pathlib import Path

import pyarrow as pa
from confluent_kafka import OFFSET_BEGINNING, Consumer, Producer, TopicPartition
from confluent_kafka.schema_registry import SchemaRegistryClient
from deltalake import DeltaTable
from deltalake.exceptions import TableNotFoundError
from gamelake_dev.producer.publish import REGISTRY_TIMEOUT_S

from ingest.core.settings.object_storage import s3_access
from ingest.core.settings.paths import PROJECT_DIR
from ingest.landing.delta.table_scan import scan


def bronze(warehouse: Path) -> pa.Table:
    return DeltaTable(str(warehouse / "bronze" / "game_events")).to_pyarrow_table()


def table(warehouse: Path, name: str) -> pa.Table:
    return DeltaTable(str(warehouse / "bronze" / name)).to_pyarrow_table()


def kafka_coordinates(bootstrap: str, topic: str) -> set[tuple[int, int]]:
    """Every (partition, offset) of ``topic``, re-read from Kafka from the start to the high watermark."""
    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": f"check-{uuid.uuid4().hex}"})
    partitions = consumer.list_topics(topic, timeout=10).topics[topic].partitions
    marks = {p: consumer.get_watermark_offsets(TopicPartition(topic, p), timeout=10) for p in partitions}
    highs = {p: high for p, (low, high) in marks.items() if high > low}  # records deleted below `low`
    consumer.assign([TopicPartition(topic, p, OFFSET_BEGINNING) for p in highs])
    seen: set[tuple[int, int]] = set()
    deadline = time.monotonic() + 120
    while any(max((o for q, o in seen if q == p), default=-1) + 1 < highs[p] for p in highs):
        assert time.monotonic() < deadline, "re-reading Kafka took too long"
        for msg in consumer.consume(5000, timeout=0.5):
            assert msg.error() is None, msg.error()
            seen.add((msg.partition(), msg.offset()))
    consumer.close()
    return seen


def landed_coordinates(warehouse: Path, *names: str) -> list[tuple[int, int]]:
    """(partition, offset) of every row of the tables (default: bronze, dead letters), repeats kept."""
    out: list[tuple[int, int]] = []
    for name in names or ("game_events", "dead_letters"):
        path = warehouse / "bronze" / name
        if DeltaTable.is_deltatable(str(path)):
            out += _coordinates(DeltaTable(str(path)))
    return out


def _coordinates(table: DeltaTable) -> list[tuple[int, int]]:
    rows = scan(table, ["_kafka_partition", "_kafka_offset"])
    return list(zip(rows["_kafka_partition"].to_pylist(), rows["_kafka_offset"].to_pylist(), strict=True))


def assert_exactly_once(warehouse: Path, bootstrap: str, topic: str) -> None:
    """Bronze + dead letters hold every Kafka record of ``topic`` exactly once: no duplicates, no gaps."""
    _assert_each_once(landed_coordinates(warehouse), bootstrap, topic)


def _assert_each_once(landed: list[tuple[int, int]], bootstrap: str, topic: str) -> None:
    duplicates = [c for c, n in Counter(landed).items() if n > 1]
    assert not duplicates, f"{len(duplicates)} duplicated coordinates, e.g. {sorted(duplicates)[:5]}"
    expected = kafka_coordinates(bootstrap, topic)
    missing = expected - set(landed)
    assert not missing, f"{len(missing)} records never landed, e.g. {sorted(missing)[:5]}"
    assert set(landed) == expected


def free_port() -> int:
    """A loopback port nobody listens on now (for a service's metrics endpoint)."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def service_env(stack, topic: str, warehouse: Path, **settings: object) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("GAMELAKE_INGEST_")}
    env.update(
        {
            "GAMELAKE_INGEST_BOOTSTRAP_SERVERS": stack.bootstrap_servers,
            "GAMELAKE_INGEST_REGISTRY_URL": stack.registry_url,
            "GAMELAKE_INGEST_TOPICS": f'["{topic}"]',
            "GAMELAKE_INGEST_GROUP_ID": f"group-{topic}",
            "GAMELAKE_INGEST_WAREHOUSE_DIR": str(warehouse),
            "GAMELAKE_INGEST_METRICS_PORT": "0",
            "GAMELAKE_INGEST_SESSION_TIMEOUT_MS": "6000",
            "GAMELAKE_INGEST_MAX_POLL_INTERVAL_MS": "20000",
            "GAMELAKE_INGEST_COMPACT_EVERY_COMMITS": "0",
        }
    )
    env.update({f"GAMELAKE_INGEST_{k.upper()}": str(v) for k, v in settings.items()})
    return env


def start_service(
    env: dict[str, str], *args: str, hooks: str = "", log: Path | None = None
) -> subprocess.Popen[bytes]:
    env = {**env, "GAMELAKE_TEST_HOOKS": hooks}
    out = open(log, "ab") if log is not None else subprocess.DEVNULL  # noqa: SIM115 - closed with the process
    return subprocess.Popen(
        [sys.executable, "-m", "ingest.cli", "run", *args], env=env, cwd=PROJECT_DIR, stdout=out, stderr=out
    )


def run_service(
    env: dict[str, str], *args: str, hooks: str = "", log: Path | None = None, timeout: float = 180
) -> int:
    proc = start_service(env, "--until-caught-up", *args, hooks=hooks, log=log)
    try:
        return proc.wait(timeout=timeout)
    except subprocess.TimeoutExpired:
        proc.send_signal(signal.SIGKILL)
        proc.wait()
        raise


def produce_raw(
    bootstrap: str, topic: str, records: list[tuple[bytes | None, bytes | None]], partition: int = 0
) -> None:
    producer = Producer({"bootstrap.servers": bootstrap, "enable.idempotence": True})
    for key, value in records:
        producer.produce(topic, value=value, key=key, partition=partition)
    assert producer.flush(30) == 0


def wait_until(condition, timeout: float, what: str) -> None:
    """Poll ``condition`` until it holds; fail naming ``what`` after ``timeout`` seconds."""
    deadline = time.monotonic() + timeout
    while not condition():
        assert time.monotonic() < deadline, f"timed out waiting for {what}"
        time.sleep(0.2)


def wait_for_count(count, target: int, stall_s: float, what: str, evidence=lambda: "") -> None:
    """Poll ``count`` until it reaches ``target``; fail naming ``what`` only when it stops growing
    for ``stall_s`` seconds, with ``evidence()`` (say, a log's tail) in the message. A slow machine
    is given the time it needs; a stalled one is caught as soon."""
    last, moved_at = count(), time.monotonic()
    while last < target:
        time.sleep(0.2)
        now = count()
        if now > last:
            last, moved_at = now, time.monotonic()
        assert time.monotonic() - moved_at < stall_s, (
            f"{what}: stuck at {last} of {target} for {stall_s:.0f} s\n{evidence()}"
        )


def registry_client(url: str, **conf: str) -> SchemaRegistryClient:
    """A registry client with a request timeout. Without one, confluent-kafka's client waits
    forever, and the local registry now and then never answers the serializer's lookup of
    topic associations, an API it does not have (seen once in CI); with one, the client retries."""
    return SchemaRegistryClient({"url": url, "timeout": REGISTRY_TIMEOUT_S, **conf})


def s3_table(warehouse_uri: str, name: str) -> DeltaTable:
    options = s3_access(warehouse_uri).delta_rs_options()
    return DeltaTable(f"{warehouse_uri}/bronze/{name}", storage_options=options)


def landed_on_s3(warehouse_uri: str) -> list[tuple[int, int]]:
    """``landed_coordinates`` of bronze and the dead letters under ``warehouse_uri`` on S3."""
    out: list[tuple[int, int]] = []
    for name in ("game_events", "dead_letters"):
        try:
            out += _coordinates(s3_table(warehouse_uri, name))
        except TableNotFoundError:  # a table no run created (no dead letter yet)
            continue
    return out


def assert_exactly_once_on_s3(warehouse_uri: str, bootstrap: str, topic: str) -> None:
    _assert_each_once(landed_on_s3(warehouse_uri), bootstrap, topic)


def ingest_cli(env: dict[str, str], *args: str, timeout: float = 900) -> subprocess.CompletedProcess[str]:
    """``ingest ARGS`` in a process of its own with ``env``: its exit code and output."""
    return subprocess.run(
        [sys.executable, "-m", "ingest.cli", *args],
        env=env,
        cwd=PROJECT_DIR,
        capture_output=True,
        text=True,
        timeout=timeout,
    )
