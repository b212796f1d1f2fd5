"""Commit cost as bronze ages: one fenced bronze commit, with and without the service's upkeep.

    python -m bench.commit_cost --commits 3000 --rows-per-commit 2000 [--upkeep-every 100]
        [--event-log-flush-s 10] [--log-hours 48] [--vacuum-hours 168] [--dir DIR] [--top] [--record]

The soak sees commit time and RSS creep up over a run, with a producer, Kafka and the whole
service in the way. This bench keeps only what ages: it lands ``--commits`` batches into a fresh
bronze table through the service's own path (``Lander.land``: decode, ``write_files``, one fenced
``BronzeWriter.commit`` carrying every partition's offset), records each commit's event-log row
(``report_commit``), and calls ``BackgroundUpkeep.after_commit`` like the service, so every
``--upkeep-every`` commits a child process compacts, vacuums, checkpoints and cleans bronze, dead
letters and the event log. No Kafka and no registry: the records are demo events of schema
versions 1-3 (framed with the version as schema id) spread over 6 partitions and two event dates.

Per window of 100 commits it reports the time of ``BronzeWriter.commit`` alone (p50, p99, max),
the event log's ``record`` (mean, max: a flush is due every ``--event-log-flush-s``), and, at the
window's end, this process's memory and the table's size. Memory is measured two ways because
they see different things: RSS (``VmRSS``) counts everything, delta-rs' Rust heap and Arrow's
buffers included; tracemalloc counts only Python's allocations. RSS growing while tracemalloc
stays flat points at native memory; ``--top`` lists the Python lines whose allocations grew most
from the first window to the last, which is how a Python-side leak shows itself.

tracemalloc slows every Python allocation, so decode times here are not the service's; the
commit is mostly native code and is little affected. Commits run back to back, so anything that
goes by the clock (the event log's flush, the upkeep's retention in hours) sees fewer seconds
per commit than in the service. With the service's retention (48 h of log, 168 h of replaced
files) a run of minutes deletes nothing, so ``_delta_log`` and the data files only grow here;
``--log-hours 1 --vacuum-hours 1`` shows the steady state in a run of more than an hour.
"""

from __future__ import annotations

import argparse
import contextlib
import datetime as dt
import os
import platform
import shlex
import sys
import tempfile
import time
import tracemalloc
import uuid
from collections.abc import Iterator
from dataclasses import astuple, dataclass, fields
from datetime import UTC, datetime
from pathlib import Path

import numpy as np
from confluent_kafka import Message
from confluent_kafka import TopicPartition as KafkaTopicPartition
from gamelake_dev.demo_schemas import load_version
from gamelake_dev.producer.datagen import EventGenerator

from ingest.core.settings.ingest_settings import load_settings
from ingest.core.settings.paths import PROJECT_DIR
from ingest.landing.decode import wire_format
from ingest.landing.decode.decoder import Decoder
from ingest.landing.decode.schema_registry import RegistrySchema, SchemaRegistryClient
from ingest.landing.delta.bronze_writer import BronzeWriter
from ingest.landing.kafka.ownership import PartitionOwnership
from ingest.landing.service.commit_report import report_commit
from ingest.landing.service.lander import Lander
from ingest.landing.service.service import UPKEEP_WAIT_S
from ingest.landing.side_tables.dead_letters import DeltaDeadLetters
from ingest.landing.side_tables.event_log import Event, EventLog
from ingest.landing.upkeep.background import BackgroundUpkeep

RESULTS = PROJECT_DIR / "bench" / "results" / "commit_cost.md"
WINDOW = 100  # commits per reported row: the service's default upkeep interval
TOPIC = "bench-commit-cost"
PARTITIONS = 6  # as the soak's topic: six app transactions in every commit
VERSIONS = [1, 2, 3]
POOL_SIZE = 5_000  # distinct payloads, reused round-robin: encoding is not what is measured
# Sessions start in the day before 03:00 UTC: most events fall on one date, some on the next.
EVENT_ANCHOR = datetime(2026, 11, 2, 3, tzinfo=UTC)
TOP_LINES = 10


class DemoRegistry(SchemaRegistryClient):
    """The demo schema versions, each under its version number as schema id: no registry to ask."""

    def __init__(self) -> None:  # nothing to connect to, so none of the client's state
        self.lookups = 0

    def schema(self, schema_id: int) -> RegistrySchema:
        version = load_version(schema_id)
        pool = version.message_class.DESCRIPTOR.file.pool
        return RegistrySchema(schema_id, version.file_descriptor_proto, pool)


class TimedEventLog(EventLog):
    """The service's event log, timing each commit row's ``record`` (and the flush it may trigger)."""

    def __init__(self, path: Path, instance_id: str, flush_s: float) -> None:
        super().__init__(path, instance_id, flush_s)
        self.record_ms: list[float] = []

    def record(self, *events: Event) -> None:
        started = time.perf_counter()
        super().record(*events)
        if all(e.kind == "commit" for e in events):
            self.record_ms.append((time.perf_counter() - started) * 1000)


class Records:
    """Kafka records as the consumer hands them over: next offsets per partition, stamped now."""

    def __init__(self) -> None:
        self.pool = _payload_pool(POOL_SIZE)
        self.taken = 0
        self.next_offset = [0] * PARTITIONS

    def batch(self, rows: int) -> list[Message]:
        now_ms = int(time.time() * 1000)
        out = []
        for n in range(self.taken, self.taken + rows):
            key, value = self.pool[n % len(self.pool)]
            partition = n % PARTITIONS
            offset, self.next_offset[partition] = self.next_offset[partition], self.next_offset[partition] + 1
            out.append(
                Message(
                    topic=TOPIC,
                    partition=partition,
                    offset=offset,
                    key=key,
                    value=value,
                    timestamp=(1, now_ms),
                )
            )
        self.taken += rows
        return out


def _payload_pool(size: int) -> list[tuple[bytes, bytes]]:
    """(key, framed value) of ``size`` demo events of mixed versions."""
    classes = {v: load_version(v) for v in VERSIONS}
    events = EventGenerator(["space_raiders", "kart_legends", "puzzle_pop"], VERSIONS, 7, EVENT_ANCHOR, 1)
    pool = []
    for event in events.events(size):
        version = classes[event.version]
        payload = version.message_class(**event.fields(version.field_names)).SerializeToString()
        pool.append((event.gamer_id.encode(), wire_format.frame(event.version, payload)))
    return pool


@dataclass(frozen=True)
class Window:
    """One row of the report: ``commits`` landed so far, timings of the window, state at its end."""

    commits: int
    commit_p50_ms: float
    commit_p99_ms: float
    commit_max_ms: float
    record_mean_ms: float
    record_max_ms: float
    rss_mb: float
    heap_mb: float
    log_files: int
    log_mb: float
    data_files: int
    version: int
    upkeeps: int


def _rss_mb() -> float:
    status = Path("/proc/self/status").read_text()
    return next(int(line.split()[1]) for line in status.splitlines() if line.startswith("VmRSS")) / 1024


def _log_size(table: Path) -> tuple[int, float]:
    """Files and MB of ``_delta_log`` (commits and checkpoints; not the compaction lock file)."""
    files = [f for f in (table / "_delta_log").iterdir() if f.is_file() and not f.name.startswith(".")]
    return len(files), sum(f.stat().st_size for f in files) / 1e6


def _data_files(table: Path) -> int:
    """Parquet files on disk, live or not: what vacuum has not removed yet."""
    return sum(
        1
        for folder in table.iterdir()
        if folder.is_dir() and folder.name != "_delta_log"
        for _ in folder.rglob("*.parquet")
    )


class AgingRun:
    """The service's landing path on a warehouse of its own, one batch per ``land_one``."""

    def __init__(self, warehouse: Path, args: argparse.Namespace) -> None:
        self.settings = load_settings(warehouse_dir=warehouse, topics=[TOPIC], metrics_port=0)
        self.instance_id = f"commit-cost-{uuid.uuid4().hex[:6]}"
        self.writer = BronzeWriter(self.settings.bronze_path, self.settings.app_id)
        self.event_log = TimedEventLog(self.settings.event_log_path, self.instance_id, args.event_log_flush_s)
        dead_letters = DeltaDeadLetters(self.settings.dead_letters_path, self.settings.app_id)
        decoder = Decoder(DemoRegistry(), 0, 0.0)
        self.lander = Lander(
            self.settings, self.writer, decoder, dead_letters, self.event_log, self.instance_id
        )
        self.ownership = PartitionOwnership(self.writer)
        self.ownership.take([KafkaTopicPartition(TOPIC, p) for p in range(PARTITIONS)])
        settings = self.settings
        paths: list[Path | str] = [settings.bronze_path, settings.dead_letters_path, settings.event_log_path]
        self.upkeep = BackgroundUpkeep(paths, args.upkeep_every, args.log_hours, args.vacuum_hours)
        self.records = Records()
        self.rows = args.rows_per_commit
        self.commits = 0
        self.version = 0
        self.upkeep_results: list[dict[str, object]] = []
        self.snapshots: list[tracemalloc.Snapshot] = []

    def land_one(self) -> float:
        """Land one batch as ``Service._land`` does; the time of ``BronzeWriter.commit`` in ms."""
        batch_id = f"{self.instance_id}-{self.commits}-{uuid.uuid4().hex[:6]}"
        records = self.records.batch(self.rows)
        landed = self.lander.land(batch_id, records, self.ownership, time.monotonic())  # type: ignore[arg-type]
        self.ownership.advance(landed.landings)
        self.commits += 1
        self.version = landed.bronze_version
        report_commit(landed, self.event_log)
        self._keep(self.upkeep.after_commit(self.commits))
        return landed.timings.commit_ms

    def windows(self, commits: int, top: bool) -> Iterator[Window]:
        """Land ``commits`` batches, yielding a row per ``WINDOW``; snapshots for ``--top`` if asked."""
        while self.commits < commits:
            commit_ms = [self.land_one() for _ in range(min(WINDOW, commits - self.commits))]
            if top and (not self.snapshots or self.commits >= commits):
                self.snapshots.append(_snapshot())
            yield self._window(commit_ms)

    def finish(self) -> None:
        """What the service does on stop: flush the buffered rows, wait for a running upkeep."""
        self.event_log.flush()
        self._keep(self.upkeep.reap(wait_s=UPKEEP_WAIT_S))
        if self.upkeep.running is not None:  # still going: ours, and its folder is about to go
            self.upkeep.running.kill()
            self.upkeep.running.wait()

    def _keep(self, result: dict[str, object] | None) -> None:
        if result is not None:
            self.upkeep_results.append(result)

    def _window(self, commit_ms: list[float]) -> Window:
        record_ms, self.event_log.record_ms = self.event_log.record_ms, []
        log_files, log_mb = _log_size(self.settings.bronze_path)
        p50, p99 = np.percentile(commit_ms, [50, 99])
        return Window(
            commits=self.commits,
            commit_p50_ms=round(float(p50), 1),
            commit_p99_ms=round(float(p99), 1),
            commit_max_ms=round(max(commit_ms), 1),
            record_mean_ms=round(float(np.mean(record_ms)), 1) if record_ms else 0.0,
            record_max_ms=round(max(record_ms), 1) if record_ms else 0.0,
            rss_mb=round(_rss_mb(), 1),
            heap_mb=round(tracemalloc.get_traced_memory()[0] / 1e6, 1),
            log_files=log_files,
            log_mb=round(log_mb, 2),
            data_files=_data_files(self.settings.bronze_path),
            version=self.version,
            upkeeps=len(self.upkeep_results),
        )


def _snapshot() -> tracemalloc.Snapshot:
    return tracemalloc.take_snapshot().filter_traces(
        [
            tracemalloc.Filter(False, tracemalloc.__file__),
            tracemalloc.Filter(False, "<frozen importlib._bootstrap*>"),
            tracemalloc.Filter(False, "<unknown>"),
        ]
    )


HEADINGS = {
    "commits": "commits",
    "commit_p50_ms": "commit p50 ms",
    "commit_p99_ms": "commit p99 ms",
    "commit_max_ms": "commit max ms",
    "record_mean_ms": "event-log record mean ms",
    "record_max_ms": "event-log record max ms",
    "rss_mb": "RSS MB",
    "heap_mb": "tracemalloc MB",
    "log_files": "_delta_log files",
    "log_mb": "_delta_log MB",
    "data_files": "data files",
    "version": "version",
    "upkeeps": "upkeeps done",
}


def markdown(windows: list[Window]) -> list[str]:
    names = [HEADINGS[f.name] for f in fields(Window)]
    return [
        "| " + " | ".join(names) + " |",
        "|" + "---:|" * len(names),
        *("| " + " | ".join(str(v) for v in astuple(w)) + " |" for w in windows),
    ]


def verdict(windows: list[Window]) -> str:
    """The last window against the first: how much one commit and the process grew with age."""
    first, last = windows[0], windows[-1]
    return (
        f"Verdict: commit p50 {first.commit_p50_ms} → {last.commit_p50_ms} ms "
        f"({last.commit_p50_ms / first.commit_p50_ms:.2f}x), RSS {first.rss_mb} → {last.rss_mb} MB "
        f"({last.rss_mb / first.rss_mb:.2f}x), _delta_log {first.log_files} → {last.log_files} files, "
        f"first window to last ({first.commits} → {last.commits} commits)."
    )


def top_growth(snapshots: list[tracemalloc.Snapshot]) -> list[str]:
    """The Python lines whose live allocations grew most from the first window to the last."""
    if len(snapshots) < 2:
        return ["(--top needs more than one window)"]
    stats = snapshots[-1].compare_to(snapshots[0], "lineno")
    grown = sorted((s for s in stats if s.size_diff > 0), key=lambda s: s.size_diff, reverse=True)
    return [str(stat) for stat in grown[:TOP_LINES]] or ["(nothing grew)"]


def settings_line(args: argparse.Namespace) -> str:
    upkeep = f"every {args.upkeep_every} commits" if args.upkeep_every else "never"
    return (
        f"{args.commits} commits of {args.rows_per_commit:,} rows ({PARTITIONS} partitions, 2 event dates), "
        f"upkeep {upkeep} (log {args.log_hours} h, vacuum {args.vacuum_hours} h), "
        f"event log flushed every {args.event_log_flush_s:g} s"
    )


def record(table: list[str], args: argparse.Namespace, command: str) -> None:
    load = " / ".join(f"{x:.1f}" for x in os.getloadavg())
    lines = [
        f"\n## {dt.datetime.now(dt.UTC):%Y-%m-%d %H:%M} UTC",
        "",
        f"- command: `python -m bench.commit_cost {command}`",
        f"- machine: {platform.node()} · {platform.machine()} · {os.cpu_count()} cores · "
        f"Python {platform.python_version()} · load average {load} at the end",
        f"- settings: {settings_line(args)}",
        "",
        *table,
    ]
    if not RESULTS.exists():
        RESULTS.write_text(
            "# Commit cost as bronze ages: one bronze commit's time and the service's memory, "
            "with and without upkeep\n"
        )
    with RESULTS.open("a") as out:
        out.write("\n".join(lines) + "\n")


def measure(warehouse: Path, args: argparse.Namespace) -> tuple[list[Window], AgingRun]:
    run = AgingRun(warehouse, args)
    windows = []
    try:
        for window in run.windows(args.commits, args.top):
            windows.append(window)
            progress = (
                f"commit p50 {window.commit_p50_ms} ms, RSS {window.rss_mb} MB, version {window.version}"
            )
            print(f"{window.commits} commits: {progress}", file=sys.stderr, flush=True)
    finally:
        run.finish()
    return windows, run


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="bench.commit_cost", description=__doc__.splitlines()[0])
    parser.add_argument("--commits", type=int, default=3_000)
    parser.add_argument("--rows-per-commit", type=int, default=2_000)
    parser.add_argument("--upkeep-every", type=int, default=100, help="commits between upkeeps; 0: never")
    parser.add_argument("--event-log-flush-s", type=float, default=10.0)
    parser.add_argument("--log-hours", type=int, default=48, help="upkeep's log retention (the service's)")
    parser.add_argument("--vacuum-hours", type=int, default=168, help="upkeep's vacuum retention")
    parser.add_argument("--dir", type=Path, help="warehouse to land in and keep (default: a temp dir)")
    parser.add_argument("--top", action="store_true", help="the top tracemalloc growth, first → last window")
    parser.add_argument("--record", action="store_true", help=f"append the results to {RESULTS.name}")
    args = parser.parse_args(argv)
    if args.dir and (args.dir / "bronze").exists():
        parser.error(f"{args.dir} holds landing tables already: the bench ages a fresh one")
    tracemalloc.start()
    keep = contextlib.nullcontext(str(args.dir)) if args.dir else None
    with keep or tempfile.TemporaryDirectory(prefix="gamelake-commit-cost-") as warehouse:
        windows, run = measure(Path(warehouse), args)
    failed = sum("failed" in result for result in run.upkeep_results)
    upkeeps = f"Upkeeps finished: {len(run.upkeep_results)}, failed: {failed}."
    table = [*markdown(windows), "", verdict(windows), upkeeps]
    print(settings_line(args), "", *table, sep="\n")
    if args.top:
        print("", "Top tracemalloc growth, first window → last:", *top_growth(run.snapshots), sep="\n")
    if args.record:
        record(table, args, shlex.join(sys.argv[1:] if argv is None else argv))
    return 0


if __name__ == "__main__":
    sys.exit(main())
