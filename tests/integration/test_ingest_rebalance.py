"""Two instances in one group, a zombie commit, and a write that outlasts max.poll.interval.ms."""

from __future__ import annotations

import os
import signal
import time

import pytest
from gamelake_dev.producer.datagen import EventGenerator
from gamelake_dev.producer.publish import publish

from tests.integration.ingest_support import (
    assert_exactly_once,
    landed_coordinates,
    service_env,
    start_service,
    table,
)

pytestmark = pytest.mark.integration


def _produce(stack, topic: str, count: int, seed: int = 8) -> None:
    events = EventGenerator(["space_raiders", "kart_legends"], [1, 2, 3], seed=seed).events(count)
    publish(stack.endpoints(topic), events, [1, 2, 3], partitions=6, progress=False)


def _event_log(warehouse) -> list[dict]:
    return sorted(table(warehouse, "ingest_event_log").to_pylist(), key=lambda e: e["logged_at"])


def _wait_for(predicate, timeout: float, what: str) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            if predicate():
                return
        except Exception:  # a table may not exist yet
            pass
        time.sleep(0.2)
    raise AssertionError(f"timed out waiting for {what}")


def _landed(warehouse) -> int:
    return len(landed_coordinates(warehouse))


def test_two_instances_rebalancing_land_everything_once(stack, fresh_topic, tmp_path):
    # Long-lived instances and a second wave of data produced only after the second instance holds
    # partitions: both must land batches however fast the first one would have drained a single wave.
    _produce(stack, fresh_topic, 5000)
    env = service_env(stack, fresh_topic, tmp_path, flush_rows=200)
    first = start_service(env, log=tmp_path / "a.log")
    second = None
    try:
        _wait_for(lambda: any(e["kind"] == "commit" for e in _event_log(tmp_path)), 60, "a first commit")
        second = start_service(env, log=tmp_path / "b.log")
        _wait_for(
            lambda: len({e["instance_id"] for e in _event_log(tmp_path) if e["kind"] == "assigned"}) == 2,
            60,
            "the second instance to be assigned partitions",
        )
        _produce(stack, fresh_topic, 15000, seed=9)
        _wait_for(lambda: _landed(tmp_path) >= 20000, 180, "all 20000 records to land")
    finally:
        for proc in (first, second):
            if proc is not None:
                proc.send_signal(signal.SIGTERM)
    assert first.wait(timeout=60) == 0 and second is not None and second.wait(timeout=60) == 0
    log = _event_log(tmp_path)
    committers = {e["instance_id"] for e in log if e["kind"] == "commit"}
    assert len(committers) == 2, "both instances landed batches"
    assert any(e["kind"] == "revoked" for e in log)
    assert_exactly_once(tmp_path, stack.bootstrap_servers, fresh_topic)


def test_a_zombie_cannot_commit_offsets_another_instance_already_landed(stack, fresh_topic, tmp_path):
    _produce(stack, fresh_topic, 6000)
    # A long poll interval, so the lease check passes and only the Delta offset fence can stop the zombie.
    env = service_env(stack, fresh_topic, tmp_path, flush_rows=500, max_poll_interval_ms=120_000)
    hook_env = {**env, "GAMELAKE_TEST_HOOK_DIR": str(tmp_path)}
    zombie = start_service(
        hook_env, "--until-caught-up", hooks="pause@files_written:12:2", log=tmp_path / "a.log"
    )
    marker = tmp_path / "files_written.paused"
    _wait_for(marker.exists, 60, "the zombie to reach its pause")
    os.kill(zombie.pid, signal.SIGSTOP)  # no heartbeats: the group expels it after session.timeout.ms
    try:
        survivor = start_service(env, "--until-caught-up", log=tmp_path / "b.log")
        assert survivor.wait(timeout=120) == 0
    finally:
        os.kill(zombie.pid, signal.SIGCONT)
    assert zombie.wait(timeout=120) == 0
    fenced = [e for e in _event_log(tmp_path) if e["kind"] == "fenced"]
    assert fenced and "another instance landed it" in fenced[0]["message"]
    assert_exactly_once(tmp_path, stack.bootstrap_servers, fresh_topic)


def test_a_write_that_outlasts_max_poll_interval_is_dropped_never_committed(stack, fresh_topic, tmp_path):
    _produce(stack, fresh_topic, 4000)
    env = service_env(stack, fresh_topic, tmp_path, flush_rows=500, max_poll_interval_ms=8000)
    proc = start_service(env, "--until-caught-up", hooks="sleep@files_written:11:2", log=tmp_path / "a.log")
    assert proc.wait(timeout=180) == 0
    log = _event_log(tmp_path)
    dropped = [e for e in log if e["kind"] == "stale_batch_dropped"]
    assert len(dropped) == 1 and "since the last poll" in dropped[0]["message"]
    assert dropped[0]["batch_id"] not in {e["batch_id"] for e in log if e["kind"] == "commit"}
    assert_exactly_once(tmp_path, stack.bootstrap_servers, fresh_topic)
