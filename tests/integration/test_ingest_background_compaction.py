"""Compaction runs off the hot path: batches keep landing while it runs, and a SIGKILL mid-way loses nothing.

The service starts each compaction in a child process. The crash point ``compacting`` holds
the child, with the table's compaction lock, for a few seconds before OPTIMIZE, so the test
can see what lands meanwhile and can kill everything at that moment.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from deltalake import DeltaTable

from ingest.core.paths import PROJECT_DIR
from ingest.dev.producer.publish import ensure_topic
from tests.integration.ingest_support import assert_exactly_once, run_service, service_env, wait_until

pytestmark = pytest.mark.integration

HOLD_S = 4


def _start(command: list[str], env: dict[str, str], log: Path) -> subprocess.Popen[bytes]:
    out = open(log, "ab")  # noqa: SIM115 - closed with the process
    return subprocess.Popen(
        [sys.executable, "-m", "ingest.cli", *command],
        env=env,
        cwd=PROJECT_DIR,
        stdout=out,
        stderr=subprocess.STDOUT,
        start_new_session=True,  # the service and its compaction child: one group to kill
    )


def _env(stack, topic: str, warehouse: Path) -> dict[str, str]:
    env = service_env(stack, topic, warehouse, flush_interval_s=0.2, compact_every_commits=5)
    return {
        **env,
        "KAFKA_BOOTSTRAP_SERVERS": stack.bootstrap_servers,
        "SCHEMA_REGISTRY_URL": stack.registry_url,
        "GAMELAKE_TEST_HOOKS": f"pause@compacting:{HOLD_S}",
        "GAMELAKE_TEST_HOOK_DIR": str(warehouse),
    }


def _produce(stack, env: dict[str, str], topic: str, log: Path) -> subprocess.Popen[bytes]:
    ensure_topic(stack.endpoints(topic), partitions=2)
    return _start(["produce", "--forever", "--rate", "2000", "--no-progress", "--topic", topic], env, log)


def test_batches_keep_landing_while_a_compaction_runs(stack, fresh_topic, tmp_path):
    env = _env(stack, fresh_topic, tmp_path)
    producer = _produce(stack, env, fresh_topic, tmp_path / "produce.log")
    service = _start(["run"], env, tmp_path / "ingest.log")
    try:
        wait_until(lambda: (tmp_path / "compacting.paused").exists(), 90, "a compaction to start")
        held_from = time.time() * 1000
        wait_until(lambda: '"event":"compaction"' in (tmp_path / "ingest.log").read_text(), 60, "its result")
    finally:
        os.killpg(producer.pid, signal.SIGTERM)
        producer.wait(timeout=30)
    os.killpg(service.pid, signal.SIGTERM)
    assert service.wait(timeout=60) == 0, (tmp_path / "ingest.log").read_text()[-2000:]
    assert run_service({**env, "GAMELAKE_TEST_HOOKS": ""}) == 0  # lands whatever the stop left in Kafka

    history = DeltaTable(str(tmp_path / "bronze" / "game_events")).history()
    optimize = min(h["timestamp"] for h in history if h["operation"] == "OPTIMIZE")
    landed_meanwhile = [
        h for h in history if h["operation"] == "WRITE" and held_from < h["timestamp"] < optimize
    ]
    assert len(landed_meanwhile) >= 5, f"only {len(landed_meanwhile)} commits during the compaction"
    assert '"numFilesRemoved"' in (tmp_path / "ingest.log").read_text()
    assert_exactly_once(tmp_path, stack.bootstrap_servers, fresh_topic)


def test_a_sigkill_during_compaction_loses_and_duplicates_nothing(stack, fresh_topic, tmp_path):
    env = _env(stack, fresh_topic, tmp_path)
    producer = _produce(stack, env, fresh_topic, tmp_path / "produce.log")
    service = _start(["run"], env, tmp_path / "ingest.log")
    try:
        wait_until(lambda: (tmp_path / "compacting.paused").exists(), 90, "a compaction to start")
        os.killpg(service.pid, signal.SIGKILL)  # the service and its compaction child, mid-way
        service.wait(timeout=30)
    finally:
        os.killpg(producer.pid, signal.SIGTERM)
        producer.wait(timeout=30)

    clean = {**env, "GAMELAKE_TEST_HOOKS": ""}
    log = tmp_path / "restart.log"
    assert run_service(clean, log=log) == 0, log.read_text()[-2000:]
    assert_exactly_once(tmp_path, stack.bootstrap_servers, fresh_topic)
    assert DeltaTable(str(tmp_path / "bronze" / "game_events")).to_pyarrow_table().num_rows > 0
