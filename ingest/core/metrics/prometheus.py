"""Prometheus metrics and the health endpoint (``/metrics`` and ``/healthz`` on one port).

The same port can serve a dashboard page (``/dashboard``); see ``dashboard_page``.

Every series exists from start-up: label values known in advance (failure stages, drop
reasons) are created at 0, so a rate or an alert sees the first increment as a change.
"""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Callable
from enum import StrEnum
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

from prometheus_client import (
    CONTENT_TYPE_LATEST,
    CollectorRegistry,
    Counter,
    Gauge,
    Histogram,
    generate_latest,
)

from ingest.core.errors import MESSAGE_STAGES


class DropReason(StrEnum):
    """Why the service dropped a batch uncommitted (it re-reads it from Kafka)."""

    REGISTRY_UNAVAILABLE = "registry_unavailable"
    FENCED = "fenced"
    STALE = "outlived_max_poll_interval"
    PARTITIONS_LOST = "partitions_lost"


REGISTRY = CollectorRegistry()
LAG = Gauge(
    "gamelake_ingest_consumer_lag",
    "Records in Kafka not yet landed, per partition",
    ["topic", "partition"],
    registry=REGISTRY,
)
ROWS = Counter("gamelake_ingest_rows_landed_total", "Rows committed to bronze", registry=REGISTRY)
DEAD_LETTERS = Counter(
    "gamelake_ingest_dead_letters_total", "Records sent to dead letters", ["stage"], registry=REGISTRY
)
DECODE_ERRORS = Counter(
    "gamelake_ingest_decode_errors_total",
    "Records that failed framing, lookup, decode or guard",
    ["stage"],
    registry=REGISTRY,
)
DECODE_PATH = Counter(
    "gamelake_ingest_decoded_records_total",
    "Records whose columns were read natively (ptars; native_python_json: with their JSON-text "
    "columns rendered in Python, the Rust renderer not being installed) or through Python (upb), "
    "which the native path hands a group it cannot read exactly",
    ["path"],
    registry=REGISTRY,
)
BATCH_SECONDS = Histogram(
    "gamelake_ingest_batch_seconds",
    "Decode + write + commit time of a batch",
    registry=REGISTRY,
    buckets=(0.05, 0.1, 0.25, 0.5, 1, 2, 5, 10, 30),
)
COMMIT_SECONDS = Histogram(
    "gamelake_ingest_commit_seconds",
    "Delta commit time",
    registry=REGISTRY,
    buckets=(0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2, 5),
)
DROPPED_BATCHES = Counter(
    "gamelake_ingest_dropped_batches_total", "Batches dropped uncommitted", ["reason"], registry=REGISTRY
)
EXPIRED_OFFSETS = Counter(
    "gamelake_ingest_expired_offsets_total",
    "Partitions whose Delta offset fell out of Kafka retention",
    registry=REGISTRY,
)
LAST_COMMIT = Gauge(
    "gamelake_ingest_last_commit_timestamp_seconds",
    "When the last batch was committed to bronze (0 before the first)",
    registry=REGISTRY,
)
REGISTRY_UP = Gauge(
    "gamelake_ingest_registry_up",
    "1 when the Schema Registry answered the service's last need of it, 0 when a batch was dropped for it",
    registry=REGISTRY,
)
for _stage in MESSAGE_STAGES:
    DEAD_LETTERS.labels(_stage)
    DECODE_ERRORS.labels(_stage)
for _reason in DropReason:
    DROPPED_BATCHES.labels(_reason)
for _path in ("native", "native_python_json", "upb"):
    DECODE_PATH.labels(_path)


def serve(
    host: str,
    port: int,
    health: Callable[[], dict[str, object]],
    registry: CollectorRegistry = REGISTRY,
    dashboard: Callable[[], str] | None = None,
) -> ThreadingHTTPServer:
    """Serve /metrics and /healthz in a daemon thread; ``health()`` returns a JSON-able dict with 'ok'.

    With ``dashboard`` (a function returning an HTML page), ``/`` and ``/dashboard`` serve that page.
    """

    def respond(path: str) -> tuple[bytes, int, str]:
        if path.startswith("/metrics"):
            return generate_latest(registry), 200, CONTENT_TYPE_LATEST
        if path.startswith("/healthz"):
            state = health()
            return json.dumps(state).encode(), (200 if state.get("ok") else 503), "application/json"
        if dashboard is not None and path.split("?")[0] in ("/", "/dashboard"):
            return dashboard().encode(), 200, "text/html; charset=utf-8"
        return b"not found\n", 404, "text/plain"

    class Handler(BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            body, status, kind = respond(self.path)
            self.send_response(status)
            self.send_header("Content-Type", kind)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *_args: object) -> None:
            """Scrapes are not worth a log line."""

    server = ThreadingHTTPServer((host, port), Handler)
    threading.Thread(target=server.serve_forever, name="metrics", daemon=True).start()
    return server


class Stopwatch:
    def __init__(self) -> None:
        self.start = time.perf_counter()

    def ms(self) -> float:
        return round((time.perf_counter() - self.start) * 1000, 2)
