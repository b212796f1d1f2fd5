"""Log lines: JSON objects off a terminal, text on one, each carrying the batch it belongs to.

The configure function runs against in-memory streams; one test runs ``ingest run`` itself in a
subprocess, against a closed port, and reads its stderr as a log shipper would.
"""

from __future__ import annotations

import io
import json
import logging
import os
import subprocess
import sys
import threading
from datetime import datetime

import pytest
from confluent_kafka import KafkaError, KafkaException

from ingest.core.logs.context import batch_context
from ingest.core.logs.json_log import log_event
from ingest.core.logs.setup import CLEAR_LINE, configure_logging, report_failure
from ingest.core.settings.paths import PROJECT_DIR
from ingest.landing.kafka.offsets import mirror_to_kafka
from ingest.landing.records import TopicPartition

CLOSED_PORT = "127.0.0.1:1"
log = logging.getLogger("gamelake.test")


class Terminal(io.StringIO):
    def isatty(self) -> bool:
        return True


@pytest.fixture(autouse=True)
def _restore_logging():
    root = logging.getLogger()
    handlers, level = root.handlers[:], root.level
    hooks = sys.excepthook, threading.excepthook
    root.handlers = []  # configure_logging would close pytest's own handlers
    yield
    root.handlers[:] = handlers
    root.setLevel(level)
    sys.excepthook, threading.excepthook = hooks


def _logged(fmt: str, stream: io.StringIO | None = None) -> io.StringIO:
    stream = stream if stream is not None else io.StringIO()
    configure_logging(logging.INFO, fmt, stream)  # type: ignore[arg-type]
    return stream


def test_a_json_line_holds_time_level_logger_message_extra_fields_and_the_exception():
    stream = _logged("json")
    try:
        raise ValueError("bad\nvalue")
    except ValueError:
        log.warning("registry %s is down", "r1", extra={"attempt": 3, "tags": ["a"]}, exc_info=True)
    (line,) = stream.getvalue().splitlines()
    record = json.loads(line)
    assert datetime.fromisoformat(record["time"]).utcoffset().total_seconds() == 0
    assert record["time"].endswith("Z")
    assert (record["level"], record["logger"], record["message"]) == (
        "WARNING",
        "gamelake.test",
        "registry r1 is down",
    )
    assert record["attempt"] == 3 and record["tags"] == ["a"]
    assert "Traceback" in record["exception"] and "ValueError: bad\nvalue" in record["exception"]


def test_an_event_s_fields_are_top_level_keys_of_its_json_line():
    stream = _logged("json")
    log_event("stop", instance="i-1", commits=4)
    record = json.loads(stream.getvalue())
    assert record["message"] == record["event"] == "stop"
    assert (record["instance"], record["commits"]) == ("i-1", 4)
    assert '"event":"stop"' in stream.getvalue()  # compact, as the integration tests grep it


def test_text_lines_are_for_people_and_hold_no_json_object():
    stream = _logged("text")
    log_event("batch_dropped", logging.WARNING, reason="fenced", records=10, detail="another instance")
    line = stream.getvalue().rstrip("\n")
    assert not line.startswith("{")
    assert " WARNING gamelake.ingest batch_dropped reason=fenced records=10" in line
    assert line.endswith('detail="another instance"')


def test_auto_writes_json_off_a_terminal_and_text_on_one():
    piped = _logged("auto")
    log.info("hello")
    assert json.loads(piped.getvalue())["message"] == "hello"
    terminal = _logged("auto", Terminal())
    log.info("hello")
    # On a terminal a line first erases the progress line it may start on.
    assert terminal.getvalue().startswith(CLEAR_LINE) and terminal.getvalue().endswith(" hello\n")


def test_json_lines_go_to_stderr_by_default_when_it_is_not_a_terminal(monkeypatch):
    monkeypatch.setattr(sys, "stderr", io.StringIO())
    configure_logging("INFO")
    log.info("to stderr")
    assert json.loads(sys.stderr.getvalue())["message"] == "to stderr"


def test_a_record_logged_inside_a_batch_carries_its_id_and_one_outside_does_not():
    stream = _logged("json")
    with batch_context("host-1-7-abc"):
        log.info("inside")
    log.info("outside")
    inside, outside = (json.loads(line) for line in stream.getvalue().splitlines())
    assert inside["batch_id"] == "host-1-7-abc"
    assert "batch_id" not in outside


def test_a_text_line_inside_a_batch_ends_with_its_id():
    stream = _logged("text")
    with batch_context("b-9"):
        log.info("decoded")
    assert stream.getvalue().rstrip("\n").endswith("decoded [batch b-9]")


def test_the_last_error_line_is_json_once_json_lines_are_on(capsys):
    report_failure("ingest run: error: before logging", 2)
    assert capsys.readouterr().err == "ingest run: error: before logging\n"
    stream = _logged("json")
    report_failure("ingest run: error: Kafka did not answer", 2)
    record = json.loads(stream.getvalue())
    assert (record["level"], record["message"], record["exit_code"]) == (
        "ERROR",
        "ingest run: error: Kafka did not answer",
        2,
    )


def test_an_uncaught_exception_is_one_json_line():
    stream = _logged("json")
    try:
        raise RuntimeError("boom")
    except RuntimeError as err:
        sys.excepthook(RuntimeError, err, err.__traceback__)
    (line,) = stream.getvalue().splitlines()
    assert json.loads(line)["level"] == "CRITICAL" and "RuntimeError: boom" in json.loads(line)["exception"]


class _RefusingConsumer:
    def commit(self, **_kwargs: object) -> None:
        raise KafkaException(KafkaError(KafkaError._TRANSPORT, "broker down"))


def test_a_kafka_outage_while_mirroring_offsets_is_a_warning():
    stream = _logged("json")
    mirror_to_kafka(_RefusingConsumer(), {TopicPartition("t", 0): 5})  # type: ignore[arg-type]
    record = json.loads(stream.getvalue())
    assert (record["level"], record["event"]) == ("WARNING", "kafka_commit_failed")


def test_ingest_run_logs_only_json_lines_and_ends_with_one_json_error(tmp_path):
    """The registry check fails at once against a closed port; DEBUG shows urllib3's lines on the way."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("GAMELAKE_INGEST_")}
    env.update(
        GAMELAKE_INGEST_BOOTSTRAP_SERVERS=CLOSED_PORT,
        GAMELAKE_INGEST_REGISTRY_URL=f"http://{CLOSED_PORT}",
        GAMELAKE_INGEST_WAREHOUSE_DIR=str(tmp_path),
        GAMELAKE_INGEST_METRICS_PORT="0",
        GAMELAKE_INGEST_LOG_LEVEL="DEBUG",
    )
    command = [sys.executable, "-m", "ingest.cli", "run", "--log-format", "json", "--until-caught-up"]
    result = subprocess.run(command, env=env, cwd=PROJECT_DIR, capture_output=True, text=True, timeout=30)
    assert result.returncode == 2, result.stderr
    records = [json.loads(line) for line in result.stderr.splitlines()]
    assert len(records) >= 2 and any(r["logger"] == "urllib3.connectionpool" for r in records)
    assert records[-1]["level"] == "ERROR" and records[-1]["exit_code"] == 2
    assert records[-1]["message"].startswith(f"ingest run: error: Schema Registry at http://{CLOSED_PORT}")
