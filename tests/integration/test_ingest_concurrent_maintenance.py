"""OPTIMIZE (delta-rs and Spark) and dbt-style Spark reads while the service lands a live stream.

Four writers race on bronze's log: the service's fenced appends, the service's own periodic
compaction, ``ingest.landing.upkeep.compaction.compact`` (delta-rs ``optimize.compact()``) from another
process, and Spark's ``OPTIMIZE``. Spark also reads bronze the way dbt does, again and again.
Ingest must keep going and land every record exactly once; Spark and delta-rs must agree.

Compactions take the table's compaction lock (Spark's OPTIMIZE under ``compaction_lock``, as
doc/DESIGN.md asks): without it, delta-rs 1.6.6 lets two compactions of the same files both
commit, and this test finds every rewritten row twice.
"""

from __future__ import annotations

import signal
import threading
import time
from collections import Counter
from collections.abc import Callable
from pathlib import Path

import pytest
from deltalake import DeltaTable
from deltalake.exceptions import CommitFailedError
from gamelake_dev.producer.datagen import EventGenerator
from gamelake_dev.producer.publish import publish

from ingest.landing.upkeep.compaction import compact, compaction_lock
from tests.integration.ingest_support import assert_exactly_once, service_env, start_service, table

pytestmark = [pytest.mark.integration, pytest.mark.slow]
GAMES = ["space_raiders", "kart_legends"]
CHUNK = 3_000  # events per produce call, at RATE events/s
RATE = 1_500
MINIMUM = {"delta_rs_optimize": 5, "spark_reads": 2, "spark_optimize_tried": 1}


def _loop(name: str, step: Callable[[], None], stop: threading.Event, done: Counter, errors: list) -> None:
    """Run ``step`` until ``stop``; count the rounds, keep the first failure.

    A maintenance commit that loses a race (delta-rs CommitFailedError, Spark's
    Concurrent*Exception) is that job's normal outcome, counted and retried; ingest must not care.
    """
    while not stop.is_set():
        try:
            step()
        except Exception as err:  # reported by the test, with the step that failed
            if isinstance(err, CommitFailedError) or "Concurrent" in str(err):
                done[f"{name}_conflicts"] += 1
                continue
            errors.append(f"{name}: {err!r}")
            return
        done[name] += 1
        time.sleep(2)


def _compact(path: Path, done: Counter) -> None:
    if "skipped" in compact(path):
        done["delta_rs_optimize_skipped"] += 1


def _stream(stack, topic: str, done: Counter, errors: list, stop_after: float) -> int:
    """Produce chunks until every maintenance loop did its minimum rounds (and at least 6 chunks)."""
    endpoints = stack.endpoints(topic)
    delivered, chunk, deadline = 0, 0, time.monotonic() + stop_after
    while not errors and (chunk < 6 or any(done[k] < n for k, n in MINIMUM.items())):
        assert time.monotonic() < deadline, f"maintenance too slow: {done} {errors}"
        versions = [1, 2, 3] if chunk < 4 else [2, 3, 4]  # v4 mid-stream: a schema change as well
        events = EventGenerator(GAMES, versions, seed=chunk).events(CHUNK)
        summary = publish(endpoints, events, versions, partitions=6, rate=RATE, progress=False)
        assert summary.failed == 0, summary.errors[:3]
        delivered += summary.delivered
        chunk += 1
    return delivered


def _wait_rows(path: Path, count: int, proc, log: Path, timeout: float = 90) -> None:
    deadline = time.monotonic() + timeout
    while DeltaTable(str(path)).to_pyarrow_dataset().count_rows() < count:
        assert proc.poll() is None, log.read_text()[-3000:]
        assert time.monotonic() < deadline, "ingest did not catch up"
        time.sleep(0.5)


def test_optimize_and_spark_reads_during_ingest_keep_exactly_once(stack, fresh_topic, tmp_path):
    from ingest.core.spark.session import local_session

    path = tmp_path / "bronze" / "game_events"
    log = tmp_path / "ingest.log"
    spark = local_session(tmp_path / "spark")  # first: it takes longer to start than a chunk lasts
    env = service_env(stack, fresh_topic, tmp_path, flush_interval_s=0.2, compact_every_commits=15)
    proc = start_service(env, log=log)
    done: Counter[str] = Counter()
    errors: list[str] = []
    stop = threading.Event()
    seen = [0]

    def spark_read() -> None:  # what dbt does with the bronze source
        frame = spark.read.format("delta").load(str(path))
        count = frame.count()
        assert count >= seen[0], f"Spark saw rows disappear: {count} < {seen[0]}"
        seen[0] = count
        if done["spark_reads"] >= 1:
            done["spark_optimize_tried"] += 1
            try:
                with compaction_lock(path, wait=True):
                    spark.sql(f"OPTIMIZE delta.`{path}`").collect()
                done["spark_optimize"] += 1
            except Exception as err:
                if "Concurrent" not in str(err):
                    raise
                done["spark_optimize_conflicts"] += 1

    loops = [
        threading.Thread(target=_loop, args=(name, step, stop, done, errors))
        for name, step in (
            ("delta_rs_optimize", lambda: _compact(path, done)),
            ("spark_reads", spark_read),
        )
    ]
    try:
        publish(stack.endpoints(fresh_topic), iter([]), [1], partitions=6, progress=False)
        _wait_rows_exist = time.monotonic() + 60
        while not DeltaTable.is_deltatable(str(path)):
            assert time.monotonic() < _wait_rows_exist and proc.poll() is None, log.read_text()[-3000:]
            time.sleep(0.2)
        for thread in loops:
            thread.start()
        delivered = _stream(stack, fresh_topic, done, errors, stop_after=240)
        _wait_rows(path, delivered, proc, log)
        stop.set()
        for thread in loops:
            thread.join(timeout=120)
        proc.send_signal(signal.SIGTERM)
        assert proc.wait(timeout=60) == 0, log.read_text()[-3000:]
    finally:
        stop.set()
        if proc.poll() is None:
            proc.kill()

    assert not errors, errors
    assert table(tmp_path, "dead_letters").num_rows == 0
    assert_exactly_once(tmp_path, stack.bootstrap_servers, fresh_topic)
    # Really interleaved: compactions committed, and ingest kept committing after them.
    # (A compaction round may rightly find nothing to do or yield to another, so the
    # number of OPTIMIZE commits is not the number of rounds.)
    history = sorted(DeltaTable(str(path)).history(), key=lambda commit: commit["version"])
    operations = [commit["operation"] for commit in history]
    assert "OPTIMIZE" in operations, operations
    assert "WRITE" in operations[operations.index("OPTIMIZE") + 1 :], operations
    delta_rs = DeltaTable(str(path)).to_pyarrow_table(columns=["_kafka_offset", "client_build"])
    frame = spark.read.format("delta").load(str(path))
    assert frame.count() == delta_rs.num_rows == delivered
    assert frame.where("client_build is not null").count() == len(delta_rs["client_build"].drop_null()) > 0
