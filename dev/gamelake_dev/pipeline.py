"""``make run``: the whole pipeline on the embedded default, one step after another.

stack up -> produce a demo stream -> show what arrived in Kafka, by schema version
-> ingest into bronze Delta until caught up
-> dbt build (the seed, silver and gold per game) + docs generate, with a summary
-> ``ingest status``: every layer, Kafka to gold, with its freshness and any anomaly.
Each step prints what it did; a failing step stops the run with its error. The status's
warnings (exit code 1) are shown, not fatal; a critical finding (2) fails the run.

``--s3`` (``make run-s3``) runs the same steps as a lakehouse beyond one machine would: every
table on the stack's S3 server (bronze and its side tables through delta-rs, silver and gold
through Spark's S3A, every commit a conditional put), and the catalog in the shared PostgreSQL
metastore in place of Derby.
"""

from __future__ import annotations

import os
import subprocess
import sys
import time
import uuid
from collections import Counter
from collections.abc import Callable

from confluent_kafka import Consumer, TopicPartition

from gamelake_dev.producer.publish import registry_client
from ingest.core.errors import IngestError
from ingest.core.settings.endpoints import Endpoints

DEMO_EVENTS = 20_000
S3_PREFIX = "lakehouse"


def _step(title: str, action: Callable[[], None]) -> None:
    print(f"\n== {title}", flush=True)
    started = time.monotonic()
    action()
    print(f"   ({time.monotonic() - started:.1f}s)", flush=True)


def _ingest(*args: str, tolerated: tuple[int, ...] = (0,)) -> None:
    command = [sys.executable, "-m", "ingest.cli", *args]
    if subprocess.run(command).returncode not in tolerated:
        raise IngestError(f"`ingest {' '.join(args)}` failed (see its output above)")


def topic_contents(endpoints: Endpoints) -> Counter[int]:
    """Messages per schema id, read from the start of every partition."""
    consumer = Consumer(
        {"bootstrap.servers": endpoints.bootstrap_servers, "group.id": f"gamelake-check-{uuid.uuid4().hex}"}
    )
    try:
        partitions = consumer.list_topics(endpoints.topic, timeout=10).topics[endpoints.topic].partitions
        ends = {
            p: consumer.get_watermark_offsets(TopicPartition(endpoints.topic, p), timeout=10)[1]
            for p in partitions
        }
        consumer.assign([TopicPartition(endpoints.topic, p, 0) for p in partitions])
        per_schema: Counter[int] = Counter()
        remaining = sum(ends.values())
        while remaining > 0:
            for message in consumer.consume(5000, timeout=5):
                if message.error() is None:
                    value = message.value() or b""
                    per_schema[int.from_bytes(value[1:5], "big") if len(value) >= 5 else -1] += 1
                    remaining -= 1
    finally:
        consumer.close()
    return per_schema


def show_arrivals(endpoints: Endpoints) -> None:
    """Print what the topic holds per schema id, each id resolved to its registered version."""
    client = registry_client(endpoints)
    subject = endpoints.value_subject
    version_of = {client.get_version(subject, v).schema_id: v for v in client.get_versions(subject)}
    for schema_id, count in sorted(topic_contents(endpoints).items()):
        version = version_of.get(schema_id)
        label = f"{subject} version {version}" if version else "not registered under this subject"
        print(f"   schema id {schema_id:>4}  ->  {label:40} {count:>8} messages")


def use_local_s3() -> None:
    """Point this run (and the processes it starts) at the stack's S3 server and shared metastore,
    as an operator's variables would, and render the Spark settings a shell's dbt needs there."""
    from gamelake_dev.localstack import artifacts, stack
    from gamelake_dev.localstack.metastore import USER as metastore_user_name
    from ingest.core.spark.metastore import create_schema
    from ingest.core.spark.session import write_defaults

    artifacts.fetch_s3()
    ports = stack.StackPorts.from_env()
    metastore = stack.metastore_up(ports)
    os.environ.update(metastore.client_environment())
    create_schema(metastore.url)
    server = ports.object_store
    for name in [name for name in os.environ if name.startswith("AWS_")]:
        del os.environ[name]
    os.environ.update(server.client_environment())
    lakehouse = f"s3://{server.bucket}/{S3_PREFIX}"
    os.environ["GAMELAKE_INGEST_WAREHOUSE_URI"] = lakehouse
    conf = write_defaults(lakehouse)
    print(f"   lakehouse: {lakehouse} on {server.endpoint_url}")
    print(f"   metastore: {metastore.url} (PostgreSQL; its password in {metastore.password_file})")
    print(f"   dbt from a shell: eval \"$(.venv/bin/ingest stack status | grep export)\"; "
          f"export GAMELAKE_INGEST_WAREHOUSE_URI={lakehouse} SPARK_CONF_DIR={conf.parent} "
          f"GAMELAKE_METASTORE_URL={metastore.url} GAMELAKE_METASTORE_USER={metastore_user_name} "
          f"GAMELAKE_METASTORE_PASSWORD=$(cat {metastore.password_file})")  # fmt: skip


def main(argv: list[str]) -> int:
    endpoints = Endpoints.from_env()
    on_s3 = argv[1:] == ["--s3"]
    try:
        _step("local stack: Kafka, Schema Registry, S3 server", lambda: _ingest("stack", "up"))
        if on_s3:
            _step("the lakehouse on the local S3 server", use_local_s3)
        _step(
            f"produce {DEMO_EVENTS} events (schema v1, v2, v3 mixed)",
            lambda: _ingest("produce", "--count", str(DEMO_EVENTS), "--seed", "42", "--versions", "1,2,3"),
        )
        _step(f"what arrived in topic {endpoints.topic}", lambda: show_arrivals(endpoints))
        _step(
            "ingest: Kafka -> bronze Delta, exactly once, until caught up",
            lambda: _ingest("run", "--until-caught-up"),
        )
        # dbt runs in a process of its own: it owns the embedded Spark session and its metastore.
        _step("dbt: build the seed, silver + gold per game; generate docs", lambda: _ingest("dbt-build"))
        _step("ingest status: every layer, Kafka to gold", lambda: _ingest("status", tolerated=(0, 1)))
    except IngestError as err:
        print(f"make run: {err}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
