"""The studio schema through the real Kafka and registry: every shape lands natively, live.

confluent-kafka's ProtobufSerializer in its default configuration registers the studio's
``common.proto`` as a subject of its own (a reference) and the well-known imports not at all.
Version 1 is produced, then version 2 (a new field inside a nested message) to the running
service, which widens the struct without a restart. Every row is compared field by field with
what was sent, NULL for what was unset, and bronze + dead letters = Kafka.
"""

from __future__ import annotations

import json
import signal
import subprocess
import sys
import urllib.request

import pyarrow as pa
import pytest
from confluent_kafka.schema_registry.protobuf import ProtobufSerializer
from confluent_kafka.serialization import MessageField, SerializationContext
from gamelake_dev.producer.publish import ensure_topic
from gamelake_dev.studio_schema import comparable, expected, matches, studio_schema

from ingest.core.settings.paths import PROJECT_DIR
from tests.integration.ingest_support import (
    assert_exactly_once,
    bronze,
    free_port,
    produce_raw,
    registry_client,
    run_service,
    service_env,
    start_service,
    table,
    wait_until,
)

pytestmark = pytest.mark.integration


def _produce(stack, topic: str, version: int, count: int):
    sent = matches(version, count, seed=version)
    serialize = ProtobufSerializer(studio_schema(version).match_class, registry_client(stack.registry_url))
    context = SerializationContext(topic, MessageField.VALUE)
    produce_raw(stack.bootstrap_servers, topic, [(b"k", serialize(m, context)) for m in sent])
    return sent


def _rows(warehouse) -> int:
    try:
        return bronze(warehouse).num_rows
    except Exception:  # the table does not exist yet
        return 0


def test_every_shape_lands_natively_and_a_nested_field_widens_the_struct_live(stack, fresh_topic, tmp_path):
    ensure_topic(stack.endpoints(fresh_topic), partitions=1)
    first = _produce(stack, fresh_topic, 1, 60)
    registered = registry_client(stack.registry_url).get_latest_version(f"{fresh_topic}-value")
    assert [r.name for r in registered.schema.references] == ["studio/common.proto"], "a reference, no WKT"

    log = tmp_path / "ingest.log"
    port = free_port()
    proc = start_service(service_env(stack, fresh_topic, tmp_path, metrics_port=port), log=log)
    try:
        wait_until(lambda: _rows(tmp_path) >= 60 or proc.poll() is not None, 120, "version 1 to land")
        second = _produce(stack, fresh_topic, 2, 60)
        wait_until(lambda: _rows(tmp_path) >= 120 or proc.poll() is not None, 120, "version 2 to land")
        assert proc.poll() is None, log.read_text()[-3000:]
        scrape = urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics").read().decode()
        # every record's columns read by ptars, its Struct and deep tree rendered in Rust
        assert 'gamelake_ingest_decoded_records_total{path="native"} 120.0' in scrape, scrape
        assert 'gamelake_ingest_decoded_records_total{path="upb"} 0.0' in scrape
        proc.send_signal(signal.SIGTERM)
        assert proc.wait(timeout=60) == 0, log.read_text()[-3000:]
    finally:
        if proc.poll() is None:
            proc.kill()

    rows = {r["event_id"]: r for r in bronze(tmp_path).to_pylist()}
    assert len(rows) == 120
    for m in first:
        want = expected(m)
        if want["loadout"] is not None:
            want["loadout"]["skin"] = None  # landed before the struct widened
        assert comparable(rows[m.event_id]) == want, m.event_id
    for m in second:
        assert comparable(rows[m.event_id]) == expected(m), m.event_id
    kinds = [e["kind"] for e in table(tmp_path, "ingest_event_log").to_pylist()]
    assert kinds.count("start") == 1 and kinds.count("schema_evolved") == 2
    assert table(tmp_path, "dead_letters").num_rows == 0
    assert_exactly_once(tmp_path, stack.bootstrap_servers, fresh_topic)


def test_an_old_bronze_is_refused_until_it_is_migrated_then_lands_natively(stack, fresh_topic, tmp_path):
    """A bronze the service before native types left (JSON text columns, offsets in Delta): the
    service refuses it in one line naming the migration and exits 2, landing nothing; the migration
    command converts it in one commit, and the service then lands natively; every record once,
    values as sent."""
    from deltalake import CommitProperties, Transaction, write_deltalake

    from ingest.landing.records import TopicPartition, txn_app_id
    from tests.unit.test_native_migration import _after_migration, _old_table

    ensure_topic(stack.endpoints(fresh_topic), partitions=1)
    sent = _produce(stack, fresh_topic, 1, 30)
    schema_id = registry_client(stack.registry_url).get_latest_version(f"{fresh_topic}-value").schema_id
    old = _old_table(sent[:10])
    coordinates = {
        "_kafka_topic": pa.array([fresh_topic] * 10),
        "_schema_id": pa.array([schema_id] * 10, pa.int32()),
    }
    for name, values in coordinates.items():
        old = old.set_column(old.schema.get_field_index(name), name, values)
    landed = Transaction(txn_app_id("gamelake-ingest", TopicPartition(fresh_topic, 0)), 9)
    bronze_path = tmp_path / "bronze" / "game_events"
    write_deltalake(
        str(bronze_path),
        old,
        partition_by=["event_date"],
        commit_properties=CommitProperties(app_transactions=[landed]),
    )
    env = service_env(stack, fresh_topic, tmp_path)
    log = tmp_path / "ingest.log"
    assert run_service(env, log=log) == 2, log.read_text()[-3000:]
    refusals = [line for line in log.read_text().splitlines() if "migrate-native-types" in line]
    assert len(refusals) == 1 and "it was landed before native types" in refusals[0], refusals
    assert bronze(tmp_path).num_rows == 10, "nothing lands on a bronze from before native types"

    migrated = subprocess.run(
        [sys.executable, "-m", "ingest.cli", "bronze", "migrate-native-types"],
        env=env, cwd=PROJECT_DIR, capture_output=True, text=True, timeout=300,
    )  # fmt: skip
    assert migrated.returncode == 0, migrated.stderr[-3000:]
    summary = json.loads(migrated.stdout)
    assert summary["rows_rewritten"] == 10 and "loadout" in summary["columns_converted"]
    assert "10 / 10 rows" in migrated.stderr

    later = _produce(stack, fresh_topic, 2, 20)
    assert run_service(env, log=log) == 0, log.read_text()[-3000:]
    rows = {r["event_id"]: r for r in bronze(tmp_path).to_pylist()}
    assert len(rows) == 50
    for i, m in enumerate(sent):  # the first ten landed as JSON text by the old service, converted
        want = _after_migration(m) if i < 10 else expected(m)  # the old service kept no presence
        if want["loadout"] is not None:
            want["loadout"]["skin"] = None
        assert comparable(rows[m.event_id]) == want, m.event_id
    for m in later:
        assert comparable(rows[m.event_id]) == expected(m), m.event_id
    assert_exactly_once(tmp_path, stack.bootstrap_servers, fresh_topic)
