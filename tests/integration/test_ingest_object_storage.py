"""The ingest with its landing tables on S3 (the local S3Proxy): exactly once, across crashes and
two instances, with every commit a conditional put."""

from __future__ import annotations

import json
import subprocess
import sys

import pyarrow as pa
import pytest
from gamelake_dev.producer.datagen import EventGenerator
from gamelake_dev.producer.publish import publish

from ingest.core.settings.paths import PROJECT_DIR
from ingest.landing.delta.table_scan import scan
from tests.integration.ingest_support import (
    assert_exactly_once_on_s3,
    ingest_cli,
    landed_on_s3,
    produce_raw,
    run_service,
    s3_table,
    service_env,
    start_service,
    wait_until,
)

pytestmark = pytest.mark.integration

GAMES = ["space_raiders", "kart_legends"]


def _env(stack, topic, tmp_path, warehouse_uri: str, **settings: object) -> dict[str, str]:
    # warehouse_dir stays a local folder: nothing may land there.
    return service_env(stack, topic, tmp_path / "local", warehouse_uri=warehouse_uri, **settings)


def _publish(stack, topic: str, count: int, seed: int) -> list:
    events = list(EventGenerator(GAMES, [1, 2, 3], seed=seed).events(count))
    summary = publish(stack.endpoints(topic), iter(events), [1, 2, 3], partitions=4, progress=False)
    assert summary.delivered == count
    return events


def test_the_landing_tables_live_on_s3_and_hold_every_record_once(stack, fresh_topic, on_s3, tmp_path):
    events = _publish(stack, fresh_topic, 3000, seed=11)
    produce_raw(stack.bootstrap_servers, fresh_topic, [(b"k", b"not the wire format")] * 3)
    log = tmp_path / "ingest.log"
    env = _env(stack, fresh_topic, tmp_path, on_s3, flush_rows=700, compact_every_commits=5)
    assert run_service(env, log=log) == 0, log.read_text()[-3000:]

    bronze = s3_table(on_s3, "game_events")
    rows = scan(bronze, ["event_id", "_schema_id"])
    assert sorted(rows["event_id"].to_pylist()) == sorted(e.event_id for e in events)
    assert rows.schema.field("_schema_id").type == pa.int32()
    letters = scan(s3_table(on_s3, "dead_letters"), ["value", "stage"]).to_pylist()
    assert [letter["value"] for letter in letters] == [b"not the wire format"] * 3
    assert scan(s3_table(on_s3, "ingest_event_log"), ["kind"]).num_rows >= 2
    assert_exactly_once_on_s3(on_s3, stack.bootstrap_servers, fresh_topic)
    assert not (tmp_path / "local" / "bronze").exists(), "nothing landed on the local disk"

    events_logged = [json.loads(line) for line in log.read_text().splitlines() if line.startswith("{")]
    upkeeps = [e["result"] for e in events_logged if e.get("event") == "compaction"]
    assert upkeeps, "the upkeep ran on S3, under its lease"
    assert all("failed" not in result for result in upkeeps), upkeeps
    assert "game_events" in upkeeps[0] and "version" in upkeeps[0]["game_events"], upkeeps[0]

    # A restart resumes from the offsets in bronze's commits on S3.
    _publish(stack, fresh_topic, 1000, seed=12)
    assert run_service(env, log=log) == 0, log.read_text()[-3000:]
    assert_exactly_once_on_s3(on_s3, stack.bootstrap_servers, fresh_topic)

    # `ingest status` reads the landing tables where they are.
    report = json.loads(ingest_cli(env, "status", "--json").stdout)
    tables = report["tables"]
    assert tables["bronze"]["path"] == f"{on_s3}/bronze/game_events"
    assert (tables["bronze"]["exists"], tables["bronze"]["rows"]) == (True, 4000)
    assert tables["dead_letters"]["rows"] == 3 and tables["event_log"]["exists"]
    assert report["kafka"]["lag"] == 0

    # The dead-letter commands and the upkeep work there too.
    listed = ingest_cli(env, "dlq", "list")
    assert listed.returncode == 0 and "3 dead letters not replayed" in listed.stdout, listed.stderr
    replayed = json.loads(ingest_cli(env, "dlq", "replay").stdout)
    assert (replayed["landed"], replayed["still_failing"]) == (0, {"framing": 3})
    purged = json.loads(ingest_cli(env, "dlq", "purge", "--older-than-days", "1").stdout)
    assert purged["deleted_rows"] == 0
    upkeep = subprocess.run(
        [sys.executable, "-m", "ingest.ops.upkeep_now"],
        env=env,
        cwd=PROJECT_DIR,
        capture_output=True,
        text=True,
    )
    assert upkeep.returncode == 0, upkeep.stderr
    assert f"{on_s3}/bronze/game_events: " in upkeep.stdout
    assert_exactly_once_on_s3(on_s3, stack.bootstrap_servers, fresh_topic)


def test_two_instances_on_s3_with_one_killed_mid_batch_land_every_record_once(
    stack, fresh_topic, on_s3, tmp_path
):
    _publish(stack, fresh_topic, 8, seed=20)  # the topic, with its 4 partitions
    # Each instance starts an upkeep every 3 commits: compactions from both race for the lease.
    env = _env(stack, fresh_topic, tmp_path, on_s3, flush_rows=400, compact_every_commits=3)
    doomed = start_service(env, hooks="kill@files_written:4", log=tmp_path / "doomed.log")
    survivor = start_service(env, log=tmp_path / "survivor.log")
    try:
        # Both own partitions before the events come, so the doomed one has batches to die in.
        for log in ("doomed.log", "survivor.log"):
            wait_until(lambda log=log: _owns_partitions(tmp_path / log), 60, f"{log} to own partitions")
        _publish(stack, fresh_topic, 6000, seed=21)
        assert doomed.wait(timeout=180) == -9, "killed at its 4th batch, after writing files on S3"
        wait_until(lambda: len(set(landed_on_s3(on_s3))) >= 6008, 180, "the survivor to land the rest")
    finally:
        for proc in (doomed, survivor):
            proc.terminate()
            proc.wait(timeout=60)
    assert_exactly_once_on_s3(on_s3, stack.bootstrap_servers, fresh_topic)
    for log in ("doomed.log", "survivor.log"):
        assert _commits(tmp_path / log), f"{log}: both instances committed to bronze on S3"
    upkeeps = [
        line["result"] for line in _events(tmp_path / "survivor.log") if line.get("event") == "compaction"
    ]
    assert upkeeps and all("failed" not in result for result in upkeeps), upkeeps


def _owns_partitions(log) -> bool:
    if not log.exists():
        return False
    lines = [json.loads(line) for line in log.read_text().splitlines() if line.startswith("{")]
    assigned = [line for line in lines if line.get("event") == "assigned"]
    return bool(assigned) and len(assigned[-1]["start_offsets"]) == 2


def _events(log) -> list[dict]:
    return [json.loads(line) for line in log.read_text().splitlines() if line.startswith("{")]


def _commits(log) -> list[dict]:
    return [line for line in _events(log) if line.get("event") == "batch"]


def test_an_old_bronze_on_s3_is_migrated_to_native_types_keeping_its_rows_and_offsets(
    stack, fresh_topic, on_s3, tmp_path
):
    """As test_ingest_native_types.py's old bronze, landed on S3: the migration's dry run converts
    every row and changes nothing; the migration then converts the JSON text columns in place,
    every row and the Kafka offset kept, and nothing is left on the local disk."""
    from deltalake import CommitProperties, Transaction, write_deltalake
    from gamelake_dev.producer.publish import ensure_topic
    from gamelake_dev.studio_schema import comparable

    from ingest.core.settings.object_storage import s3_access
    from ingest.landing.records import TopicPartition, txn_app_id
    from tests.integration.ingest_support import registry_client
    from tests.integration.test_ingest_native_types import _produce
    from tests.unit.test_native_migration import _after_migration, _old_table

    ensure_topic(stack.endpoints(fresh_topic), partitions=1)
    sent = _produce(stack, fresh_topic, 1, 10)
    schema_id = registry_client(stack.registry_url).get_latest_version(f"{fresh_topic}-value").schema_id
    old = _old_table(sent)
    coordinates = {
        "_kafka_topic": pa.array([fresh_topic] * 10),
        "_schema_id": pa.array([schema_id] * 10, pa.int32()),
    }
    for name, values in coordinates.items():
        old = old.set_column(old.schema.get_field_index(name), name, values)
    partition = txn_app_id("gamelake-ingest", TopicPartition(fresh_topic, 0))
    write_deltalake(
        f"{on_s3}/bronze/game_events",
        old,
        partition_by=["event_date"],
        commit_properties=CommitProperties(app_transactions=[Transaction(partition, 9)]),
        storage_options=s3_access(on_s3).delta_rs_options(),
    )
    landed = s3_table(on_s3, "game_events")
    assert pa.types.is_string(pa.schema(landed.schema().to_arrow()).field("loadout").type)
    env = _env(stack, fresh_topic, tmp_path, on_s3)

    dry = ingest_cli(env, "bronze", "migrate-native-types", "--dry-run")
    assert dry.returncode == 0, dry.stderr[-3000:]
    assert "object storage" not in dry.stderr
    planned = json.loads(dry.stdout)
    assert planned["dry_run"] and planned["rows_rewritten"] == 10
    assert planned["bronze"].startswith(on_s3)
    assert s3_table(on_s3, "game_events").version() == landed.version(), "a dry run writes nothing"

    migrated = ingest_cli(env, "bronze", "migrate-native-types")
    assert migrated.returncode == 0, migrated.stderr[-3000:]
    summary = json.loads(migrated.stdout)
    assert summary["rows_rewritten"] == 10 and "loadout" in summary["columns_converted"]
    assert summary["app_transactions_kept"] == 1
    assert "10 / 10 rows" in migrated.stderr

    bronze = s3_table(on_s3, "game_events")
    assert not pa.types.is_string(pa.schema(bronze.schema().to_arrow()).field("loadout").type)
    assert bronze.transaction_version(partition) == 9
    rows = {r["event_id"]: r for r in bronze.to_pyarrow_table().to_pylist()}
    assert len(rows) == 10
    for m in sent:
        assert comparable(rows[m.event_id]) == _after_migration(m), m.event_id
    again = ingest_cli(env, "bronze", "migrate-native-types")
    assert again.returncode == 0 and json.loads(again.stdout)["rows_rewritten"] == 0, again.stderr[-3000:]
    assert not (tmp_path / "local" / "bronze").exists(), "nothing was written to the local disk"
