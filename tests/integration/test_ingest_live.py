"""The service as a long-lived process: live schema evolution, SIGTERM, metrics and health."""

from __future__ import annotations

import json
import signal
import time
import urllib.request

import pytest
from gamelake_dev.producer.datagen import EventGenerator
from gamelake_dev.producer.publish import publish

from tests.integration.ingest_support import (
    assert_exactly_once,
    bronze,
    free_port,
    service_env,
    start_service,
    table,
)

pytestmark = pytest.mark.integration
GAMES = ["space_raiders", "puzzle_pop"]


def _wait_rows(warehouse, count: int, proc, timeout: float = 90) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        assert proc.poll() is None, "the service exited"
        try:
            if bronze(warehouse).num_rows >= count:
                return
        except Exception:  # the table may not exist yet
            pass
        time.sleep(0.5)
    raise AssertionError(f"bronze did not reach {count} rows in {timeout} s")


def test_a_new_version_gets_its_columns_live_without_restart_or_failed_batch(stack, fresh_topic, tmp_path):
    port = free_port()
    env = service_env(stack, fresh_topic, tmp_path, metrics_port=port)
    old = list(EventGenerator(GAMES, [1, 2, 3], seed=3).events(2000))
    publish(stack.endpoints(fresh_topic), iter(old), [1, 2, 3], partitions=6, progress=False)
    proc = start_service(env, log=tmp_path / "ingest.log")
    try:
        _wait_rows(tmp_path, 2000, proc)
        assert "client_build" not in bronze(tmp_path).column_names
        new = list(EventGenerator(GAMES, [4], seed=4).events(1500))
        summary = publish(stack.endpoints(fresh_topic), iter(new), [4], partitions=6, progress=False)
        _wait_rows(tmp_path, 3500, proc)
        time.sleep(2.5)  # idle: the lag gauges are refreshed every second
        health = json.loads(urllib.request.urlopen(f"http://127.0.0.1:{port}/healthz").read())
        scrape = urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics").read().decode()
        assert proc.poll() is None
        proc.send_signal(signal.SIGTERM)
        assert proc.wait(timeout=60) == 0
    finally:
        if proc.poll() is None:
            proc.kill()
    rows = {r["event_id"]: r for r in bronze(tmp_path).to_pylist()}
    for event in new:
        row = rows[event.event_id]
        assert row["_schema_id"] == summary.schema_ids[4]
        assert (row["client_build"], row["is_ranked"], row["network_latency_ms"]) == (
            event.client_build,
            event.is_ranked,
            event.network_latency_ms,
        )
    assert all(rows[e.event_id]["client_build"] is None for e in old)
    kinds = [e["kind"] for e in table(tmp_path, "ingest_event_log").to_pylist()]
    assert kinds.count("start") == 1 and "schema_evolved" in kinds
    assert not {"fenced", "registry_unavailable", "stale_batch_dropped"} & set(kinds)
    assert table(tmp_path, "dead_letters").num_rows == 0
    assert health["ok"] and len(health["partitions"]) == 6
    assert "gamelake_ingest_rows_landed_total 3500.0" in scrape
    assert f'gamelake_ingest_consumer_lag{{partition="0",topic="{fresh_topic}"}} 0.0' in scrape
    assert "gamelake_ingest_batch_seconds_count" in scrape
    assert "gamelake_ingest_commit_seconds_count" in scrape
    assert_exactly_once(tmp_path, stack.bootstrap_servers, fresh_topic)


def test_sigterm_flushes_the_open_batch_commits_and_exits_cleanly(stack, fresh_topic, tmp_path):
    env = service_env(stack, fresh_topic, tmp_path, flush_interval_s=600, flush_rows=1_000_000)
    events = list(EventGenerator(GAMES, [1, 2], seed=5).events(3000))
    publish(stack.endpoints(fresh_topic), iter(events), [1, 2], partitions=6, progress=False)
    proc = start_service(env, log=tmp_path / "ingest.log")
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline and b'"assigned"' not in (tmp_path / "ingest.log").read_bytes():
        time.sleep(0.3)
    time.sleep(3)  # the open batch fills; nothing is due for 600 s
    assert proc.poll() is None
    proc.send_signal(signal.SIGTERM)
    assert proc.wait(timeout=60) == 0
    assert bronze(tmp_path).num_rows == 3000
    log = sorted(table(tmp_path, "ingest_event_log").to_pylist(), key=lambda e: e["logged_at"])
    kinds = [e["kind"] for e in log]
    assert kinds.count("commit") == 1 and kinds[-1] == "stop"
    assert_exactly_once(tmp_path, stack.bootstrap_servers, fresh_topic)
