"""Where a partition starts: expired offsets are a loud event, and a fresh group resumes from Delta.

Retention is simulated with ``AdminClient.delete_records``: it advances a partition's log start
offset exactly as retention does, so the offset stored in Delta is no longer in Kafka.
"""

from __future__ import annotations

import json
import re
import signal
import time
import urllib.request
from pathlib import Path

import pytest
from confluent_kafka import TopicPartition
from confluent_kafka.admin import AdminClient
from gamelake_dev.demo_schemas import load_version
from gamelake_dev.producer.publish import ensure_topic, register_versions

from ingest.landing.decode import wire_format as wire
from tests.integration.ingest_support import (
    assert_exactly_once,
    bronze,
    free_port,
    kafka_coordinates,
    landed_coordinates,
    produce_raw,
    registry_client,
    run_service,
    service_env,
    start_service,
    table,
)

pytestmark = pytest.mark.integration
V1 = load_version(1).message_class


def _good(schema_id: int, start: int, count: int) -> list[tuple[bytes | None, bytes | None]]:
    return [
        (b"k", wire.frame(schema_id, V1(event_id=f"e{n}", game_name="space_raiders").SerializeToString()))
        for n in range(start, start + count)
    ]


def _topic_with_schema(stack, topic: str) -> int:
    endpoints = stack.endpoints(topic)
    ensure_topic(endpoints, partitions=2)
    register_versions(endpoints, [1])

    return registry_client(stack.registry_url).get_latest_version(f"{topic}-value").schema_id


def _expire(stack, topic: str, partition: int, before: int) -> None:
    """Delete the records of ``topic[partition]`` below ``before``, as retention would."""
    admin = AdminClient({"bootstrap.servers": stack.bootstrap_servers})
    futures = admin.delete_records([TopicPartition(topic, partition, before)], operation_timeout=15)
    for future in futures.values():
        assert future.result(timeout=30).low_watermark == before  # the new log start offset


def _landed_then_expired(stack, topic: str, warehouse: Path) -> tuple[dict[str, str], int]:
    """20 records per partition land; 30 more arrive on partition 0 and the first 20 of them expire.

    Returns the service env and the schema id. Delta holds offset 19 for partition 0; Kafka now
    starts at 40, so offsets 20..39 were never landed and are gone.
    """
    schema_id = _topic_with_schema(stack, topic)
    for partition in (0, 1):
        produce_raw(stack.bootstrap_servers, topic, _good(schema_id, 100 * partition, 20), partition)
    env = service_env(stack, topic, warehouse)
    assert run_service(env, log=warehouse / "ingest.log") == 0, (warehouse / "ingest.log").read_text()[-3000:]
    assert bronze(warehouse).num_rows == 40
    produce_raw(stack.bootstrap_servers, topic, _good(schema_id, 20, 30), partition=0)
    produce_raw(stack.bootstrap_servers, topic, _good(schema_id, 120, 5), partition=1)
    _expire(stack, topic, 0, 40)
    return env, schema_id


def _logged_error(line: str, event: str) -> bool:
    """A JSON log line (the service's log is not a terminal) of ``event`` at ERROR."""
    return '"level":"ERROR"' in line and f'"event":"{event}"' in line


def _expired_events(warehouse: Path) -> list[dict]:
    return [e for e in table(warehouse, "ingest_event_log").to_pylist() if e["kind"] == "offset_expired"]


def test_an_expired_offset_stops_the_service_loudly_by_default(stack, fresh_topic, tmp_path):
    env, _ = _landed_then_expired(stack, fresh_topic, tmp_path)
    log = tmp_path / "run2.log"
    code = run_service(env, log=log, timeout=120)
    text = log.read_text()
    assert code == 1, text[-3000:]
    errors = [line for line in text.splitlines() if _logged_error(line, "offset_expired")]
    assert errors, text[-3000:]
    # topic[partition] and the missing range 20..39 are named, in the log and in the exit message
    assert f"{fresh_topic}[0]" in errors[0] and re.search(r"\b20\b.*\b39\b", errors[0]), errors[0]
    assert "ingest run: error:" in text and f"{fresh_topic}[0]" in text.split("ingest run: error:")[-1]
    events = _expired_events(tmp_path)
    assert len(events) == 1 and f"{fresh_topic}[0]" in events[0]["message"]
    assert re.search(r"\b20\b.*\b39\b", events[0]["message"]), events[0]["message"]
    # nothing past the gap was landed, and Delta still holds offset 19 for partition 0
    assert max(o for p, o in landed_coordinates(tmp_path) if p == 0) == 19


def _scrape(port: int) -> str:
    return urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=5).read().decode()


def test_with_earliest_the_gap_is_recorded_and_ingest_continues_from_the_log_start(
    stack, fresh_topic, tmp_path
):
    env, _ = _landed_then_expired(stack, fresh_topic, tmp_path)
    port = free_port()
    env = {
        **env,
        "GAMELAKE_INGEST_ON_EXPIRED_OFFSET": "earliest",
        "GAMELAKE_INGEST_METRICS_PORT": str(port),
    }
    proc = start_service(env, log=tmp_path / "run2.log")
    try:
        deadline = time.monotonic() + 90
        while bronze(tmp_path).num_rows < 40 + 10 + 5:
            assert proc.poll() is None, (tmp_path / "run2.log").read_text()[-3000:]
            assert time.monotonic() < deadline, "the records after the gap never landed"
            time.sleep(0.5)
        scrape = _scrape(port)
        proc.send_signal(signal.SIGTERM)
        assert proc.wait(timeout=60) == 0
    finally:
        if proc.poll() is None:
            proc.kill()
    assert re.search(r"^gamelake_ingest_expired_offsets_total 1\.0$", scrape, re.M), scrape
    text = (tmp_path / "run2.log").read_text()
    assert any(_logged_error(line, "offset_expired") for line in text.splitlines())
    events = _expired_events(tmp_path)
    assert len(events) == 1 and re.search(r"\b20\b.*\b39\b", events[0]["message"]), events
    landed = landed_coordinates(tmp_path)
    assert len(landed) == len(set(landed)), "duplicates after the gap"
    # exactly what Kafka still has, plus what landed before the gap; offsets 20..39 are the recorded gap
    assert set(landed) == kafka_coordinates(stack.bootstrap_servers, fresh_topic) | {
        (0, o) for o in range(20)
    }
    assert not {(0, o) for o in range(20, 40)} & set(landed)


def test_a_fresh_consumer_group_resumes_from_delta_never_from_latest_or_earliest(
    stack, fresh_topic, tmp_path
):
    schema_id = _topic_with_schema(stack, fresh_topic)
    produce_raw(stack.bootstrap_servers, fresh_topic, _good(schema_id, 0, 30), partition=0)
    produce_raw(stack.bootstrap_servers, fresh_topic, _good(schema_id, 100, 30), partition=1)
    first = service_env(stack, fresh_topic, tmp_path)
    assert run_service(first, log=tmp_path / "ingest.log") == 0
    produce_raw(stack.bootstrap_servers, fresh_topic, _good(schema_id, 30, 12), partition=0)
    produce_raw(stack.bootstrap_servers, fresh_topic, _good(schema_id, 130, 7), partition=1)
    # A group Kafka has never seen, and no committed offsets: it must start where Delta is.
    fresh_group = {**first, "GAMELAKE_INGEST_GROUP_ID": f"another-group-{fresh_topic}"}
    assert run_service(fresh_group, log=tmp_path / "ingest.log") == 0
    assert bronze(tmp_path).num_rows == 30 + 30 + 12 + 7
    assert_exactly_once(tmp_path, stack.bootstrap_servers, fresh_topic)
    events = sorted(table(tmp_path, "ingest_event_log").to_pylist(), key=lambda e: e["logged_at"])
    starts = json.loads([e for e in events if e["kind"] == "assigned"][-1]["message"])
    assert starts == {f"{fresh_topic}[0]": 30, f"{fresh_topic}[1]": 30}
