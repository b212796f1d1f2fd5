"""`ingest produce --forever` and `ingest run` stop cleanly on SIGTERM and on SIGINT, in the background.

Both are started the way a non-interactive shell starts a background job, with SIGINT ignored.
Each signal must still flush what was sent or landed, print the summary, exit 0, and leave
Kafka and bronze agreeing exactly.
"""

from __future__ import annotations

import os
import re
import signal
import subprocess
import sys

import pytest

from ingest.core.settings.paths import PROJECT_DIR
from tests.integration.ingest_support import assert_exactly_once, bronze, service_env, wait_until

pytestmark = pytest.mark.integration


def _background(command: list[str], env: dict[str, str], log) -> subprocess.Popen[bytes]:
    def like_a_background_job() -> None:
        signal.signal(signal.SIGINT, signal.SIG_IGN)

    return subprocess.Popen(
        [sys.executable, "-m", "ingest.cli", *command],
        env=env,
        cwd=PROJECT_DIR,
        stdout=log,
        stderr=subprocess.STDOUT,
        preexec_fn=like_a_background_job,
    )


def _rows(warehouse) -> int:
    try:
        return bronze(warehouse).num_rows
    except Exception:  # the table does not exist yet
        return 0


@pytest.mark.parametrize("signum", [signal.SIGTERM, signal.SIGINT])
def test_producer_and_service_stop_cleanly_in_the_background(stack, fresh_topic, tmp_path, signum):
    env = {
        **service_env(stack, fresh_topic, tmp_path, flush_interval_s=0.2),
        "KAFKA_BOOTSTRAP_SERVERS": stack.bootstrap_servers,
        "SCHEMA_REGISTRY_URL": stack.registry_url,
    }
    produce_log, ingest_log = tmp_path / "produce.log", tmp_path / "ingest.log"
    with open(produce_log, "wb") as plog, open(ingest_log, "wb") as ilog:
        producer = _background(
            [
                "produce",
                "--forever",
                "--rate",
                "2000",
                "--no-progress",
                "--topic",
                fresh_topic,
                "--partitions",
                "2",
            ],
            env,
            plog,
        )
        wait_until(
            lambda: "producing until interrupted" in produce_log.read_text(), 60, "the producer to start"
        )
        service = _background(["run"], env, ilog)
        wait_until(lambda: _rows(tmp_path) > 0, 60, "the first rows in bronze")

        os.kill(producer.pid, signum)
        assert producer.wait(timeout=30) == 0, produce_log.read_text()[-2000:]
        produced = produce_log.read_text()
        assert f"stopped by {signal.Signals(signum).name}" in produced
        delivered = int(re.search(r"produced (\d+) events \(0 failed\)", produced).group(1))
        wait_until(lambda: _rows(tmp_path) == delivered, 60, f"{delivered} rows in bronze")

        os.kill(service.pid, signum)
        assert service.wait(timeout=30) == 0, ingest_log.read_text()[-2000:]
    landed = ingest_log.read_text()
    assert f'"signal":"{signal.Signals(signum).name}"' in landed and '"event":"stop"' in landed
    assert _rows(tmp_path) == delivered > 0
    assert_exactly_once(tmp_path, stack.bootstrap_servers, fresh_topic)
