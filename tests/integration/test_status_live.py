"""``ingest status`` on the real pipeline: Kafka, the ingest, a dbt build on Spark, in one view.

One story: bronze landed but nothing built (a warning per layer), a build (healthy, every layer
fresh, row counts that match), a batch of dead letters only (silver still fresh), new events
that silver has not read (a stale layer past its threshold), and the topic recreated under the
ingest (offsets ahead of the end: critical).
"""

from __future__ import annotations

import json
import subprocess
import sys
import time
from pathlib import Path

import pytest
from confluent_kafka.admin import AdminClient
from gamelake_dev.producer.datagen import EventGenerator
from gamelake_dev.producer.publish import ensure_topic, publish

from ingest.core.settings.paths import PROJECT_DIR
from tests.integration import dbt_support as support
from tests.integration.ingest_support import produce_raw, run_service, service_env, wait_until

pytestmark = [pytest.mark.integration, pytest.mark.slow]

GAMES = ["space_raiders", "puzzle_pop"]


def _cli(env: dict[str, str], *args: str, timeout: float = 60) -> subprocess.CompletedProcess[str]:
    """``ingest <args>`` in the test's project copy (GAMELAKE_HOME)."""
    return subprocess.run(
        [sys.executable, "-m", "ingest.cli", *args],
        env=env,
        cwd=env["GAMELAKE_HOME"],
        capture_output=True,
        text=True,
        timeout=timeout,
    )


def _status(env: dict[str, str], *flags: str) -> tuple[int, dict, float]:
    started = time.monotonic()
    out = _cli(env, "status", "--json", *flags)
    took = time.monotonic() - started
    assert out.stdout, out.stderr[-3000:]
    # A signal (seen once: SIGABRT after a complete report) shows what the process printed last.
    assert out.returncode >= 0, f"ingest status died of signal {-out.returncode}: {out.stderr[-3000:]}"
    return out.returncode, json.loads(out.stdout), took


def _codes(report: dict) -> set[str]:
    return {anomaly["code"] for anomaly in report["anomalies"]}


def _produce(stack, topic: str, seed: int, count: int) -> None:
    events = EventGenerator(GAMES, [2, 3, 4], seed=seed).events(count)
    publish(stack.endpoints(topic), events, [2, 3, 4], partitions=2, progress=False)


def test_status_follows_every_layer_and_names_what_is_wrong(stack, fresh_topic, tmp_path: Path) -> None:
    project = support.copy_project(tmp_path / "project")
    support.write_seed(project, dict.fromkeys(GAMES, True))
    from ingest.games import model_files

    model_files.sync(project)
    (project / ".cache").symlink_to(PROJECT_DIR / ".cache")  # the Delta jars
    warehouse = tmp_path / "warehouse"
    env = service_env(stack, fresh_topic, warehouse, status_quarantine_warn_ratio=0.5)
    env.update({"GAMELAKE_HOME": str(project), "GAMELAKE_WAREHOUSE_DIR": str(warehouse)})
    env.pop("GAMELAKE_BRONZE_PATH", None)

    ensure_topic(stack.endpoints(fresh_topic), partitions=2)
    _produce(stack, fresh_topic, seed=1, count=3000)
    assert run_service(env, log=tmp_path / "ingest.log") == 0

    # bronze landed, nothing built yet: one warning per layer, and what to run
    code, report, _ = _status(env)
    assert (code, report["level"]) == (1, "warning")
    assert _codes(report) == {"table_missing"}
    assert report["tables"]["bronze"]["rows"] == 3000 and report["kafka"]["lag"] == 0
    assert report["registry"]["reachable"] is True

    refresh = _cli(env, "refresh", timeout=900)
    assert refresh.returncode == 0, refresh.stdout[-3000:] + refresh.stderr[-3000:]

    # built: healthy, every layer caught up, and the counts add up
    code, report, took = _status(env)
    assert (code, report["level"], report["anomalies"]) == (0, "healthy", [])
    bronze_version = report["tables"]["bronze"]["version"]
    for game in GAMES:
        silver, gold = report["silver"][game], report["gold"][game]
        assert silver["bronze_version"] == bronze_version and silver["freshness_s"] == 0
        assert gold["freshness_s"] == 0 and gold["player_agg"]["rows"] > 0
    quarantined = report["quarantine"]["rows"]
    assert sum(report["silver"][g]["rows"] for g in GAMES) + quarantined == 3000
    print(f"ingest status over Kafka, bronze, 2 silver and 4 gold tables: {took:.2f} s")
    assert took < 10, f"status took {took:.1f} s"  # no Spark JVM: a JVM alone takes longer

    # a batch that only dead-letters is a bronze commit without rows: silver is not behind it
    produce_raw(stack.bootstrap_servers, fresh_topic, [(None, b"not a framed protobuf")] * 5)
    assert run_service(env, log=tmp_path / "ingest.log") == 0
    time.sleep(1.5)
    code, report, _ = _status({**env, "GAMELAKE_INGEST_STATUS_FRESHNESS_WARN_S": "1"})
    assert report["tables"]["bronze"]["version"] > bronze_version
    assert report["tables"]["dead_letters"]["rows"] == 5 and "stale" not in _codes(report)
    assert all(report["silver"][game]["freshness_s"] == 0 for game in GAMES)

    # new events land, silver has not read them: past a 1 s threshold, silver and quarantine are stale
    _produce(stack, fresh_topic, seed=2, count=500)
    assert run_service(env, log=tmp_path / "ingest.log") == 0
    time.sleep(1.5)
    code, report, _ = _status({**env, "GAMELAKE_INGEST_STATUS_FRESHNESS_WARN_S": "1"})
    assert code == 1 and "stale" in _codes(report)
    assert all(report["silver"][game]["freshness_s"] >= 1 for game in GAMES)

    # the topic recreated under the ingest: its landed offsets are past the new topic's end
    admin = AdminClient({"bootstrap.servers": stack.bootstrap_servers})
    admin.delete_topics([fresh_topic])[fresh_topic].result(30)
    wait_until(lambda: fresh_topic not in admin.list_topics(timeout=10).topics, 60, "the topic deleted")
    ensure_topic(stack.endpoints(fresh_topic), partitions=2)
    code, report, _ = _status(env)
    assert code == 2 and report["level"] == "critical"
    assert "offset_ahead_of_end" in _codes(report)
    assert all(p["ahead_of_end"] for p in report["partitions"] if p["landed_offset"] is not None)
    text = _cli(env, "status")
    assert text.returncode == 2 and "offset" in text.stdout and "space_raiders" in text.stdout
