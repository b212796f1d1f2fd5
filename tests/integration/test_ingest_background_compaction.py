"""Compaction runs off the hot path: batches keep landing while it runs, and a SIGKILL mid-way loses nothing.

The service starts each compaction in a child process. The crash point ``compacting`` holds
the child, with the table's compaction lock, for a few seconds before OPTIMIZE, so the test
can see what lands meanwhile and can kill everything at that moment.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from functools import partial
from pathlib import Path

import pytest
from deltalake import DeltaTable
from gamelake_dev.producer.publish import ensure_topic

from ingest.core.settings.paths import PROJECT_DIR
from tests.integration.ingest_support import (
    assert_exactly_once,
    run_service,
    service_env,
    wait_for_count,
    wait_until,
)

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


def _newest_version(table: Path) -> int:
    versions = _log_versions(table)  # none yet: the glob of a missing folder is empty
    return versions[-1] if versions else -1


def _tails(*logs: Path, chars: int = 1500) -> str:
    return "\n".join(f"--- {log.name}:\n{log.read_text()[-chars:]}" for log in logs if log.exists())


def _log_versions(table: Path) -> list[int]:
    return sorted(int(f.name.split(".")[0]) for f in (table / "_delta_log").glob("*.json"))


def _age(table: Path, hours: float) -> int:
    """Backdate every log file of ``table`` by ``hours`` (delta-rs's log cleanup reads the file's
    modification time); the newest checkpoint aged. The cleanup keeps what any version inside the
    retention needs: the log from the newest checkpoint older than the retention on."""
    then = time.time() - hours * 3600
    for entry in (table / "_delta_log").glob("0*"):
        os.utime(entry, (then, then))
    return max(_checkpoints(table))


def test_the_upkeep_deletes_old_log_files_beside_landing_and_loses_nothing(stack, fresh_topic, tmp_path):
    """An hour of retention is too long to wait for, so the log files that exist at one moment are
    made two hours old; the service's next upkeeps must delete those a checkpoint covers, from
    bronze and from the event log, while batches keep landing."""
    env = {
        **_env(stack, fresh_topic, tmp_path),
        "GAMELAKE_TEST_HOOKS": "",
        "GAMELAKE_INGEST_COMPACT_EVERY_COMMITS": "10",
        "GAMELAKE_INGEST_LOG_RETENTION_HOURS": "1",
        "GAMELAKE_INGEST_EVENT_LOG_FLUSH_S": "1",
    }
    bronze_path, event_log = (tmp_path / "bronze" / name for name in ("game_events", "ingest_event_log"))
    producer = _produce(stack, env, fresh_topic, tmp_path / "produce.log")
    service = _start(["run"], env, tmp_path / "ingest.log")
    try:
        evidence = partial(_tails, tmp_path / "ingest.log", tmp_path / "produce.log")
        wait_for_count(lambda: _newest_version(bronze_path), 30, 60, "bronze commits", evidence)
        wait_until(event_log.exists, 60, "the event log")
        aged = {path: _age(path, hours=2) for path in (bronze_path, event_log)}
        # Two more upkeeps: each checkpoints past the aged versions, then cleans the log.
        target = aged[bronze_path] + 25
        wait_for_count(lambda: _newest_version(bronze_path), target, 60, "commits after the ageing", evidence)
    finally:
        os.killpg(producer.pid, signal.SIGTERM)
        producer.wait(timeout=30)
    os.killpg(service.pid, signal.SIGTERM)
    assert service.wait(timeout=60) == 0, (tmp_path / "ingest.log").read_text()[-2000:]
    assert run_service(env) == 0

    for path, aged_checkpoint in aged.items():
        versions = _log_versions(path)
        assert aged_checkpoint > 0, f"{path.name}: no checkpoint past version 0 before the ageing"
        # Every aged commit before the aged checkpoint is gone; the rest is kept, with no gap.
        assert versions[0] >= aged_checkpoint, f"{path.name}: aged log files kept ({versions[:5]}...)"
        assert versions == list(range(versions[0], versions[-1] + 1)), f"{path.name}: a gap in the log"
    removed = [
        result["game_events"]["log_files_removed"]
        for result in _upkeep_results(tmp_path / "ingest.log")
        if "game_events" in result
    ]
    assert sum(removed) >= aged[bronze_path], removed
    assert_exactly_once(tmp_path, stack.bootstrap_servers, fresh_topic)


def _upkeep_results(log: Path) -> list[dict[str, dict[str, int]]]:
    lines = (json.loads(line) for line in log.read_text().splitlines() if '"event":"compaction"' in line)
    return [line["result"] for line in lines]


def _checkpoints(table: Path) -> set[int]:
    return {int(f.name.split(".")[0]) for f in (table / "_delta_log").glob("*.checkpoint.parquet")}
