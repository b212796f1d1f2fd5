"""Soak: producer and ingest side by side for a long while, reported minute by minute.

    python -m bench.soak [--minutes 120] [--rate 10000] [--then-minutes 30 --then-rate 20000] [--s3]

One ingest process with the production defaults (flush at 50,000 rows or 1 s), a producer at
``--rate`` events/s of mixed v1-v3 events on a fresh 6-partition topic, then optionally a second
phase at ``--then-rate``. Every few seconds the harness samples the service's RSS and its upkeep
child's apart, the CPU time of both, and the bronze table's files and bytes, data and
``_delta_log`` apart. Afterwards, per minute of Kafka time: p50/p99/max freshness of every event
(``_ingested_at - _kafka_timestamp``), the mean and max commit time, RSS, CPU cores, and the
table's size; then Kafka = bronze + dead letters. Results are appended to
bench/results/soak.md with machine, date and settings.

With ``--s3`` the lakehouse is on a private S3Proxy on loopback (``bench.soak_s3``), so that a
long run shows what is rare there: compaction, checkpoints, log cleanup and vacuum, and what
they cost in requests. Bronze's files and bytes then come from a listing of its prefix, every
15 s rather than 5 (a listing is requests too), and each minute also counts the ingest's S3
requests by kind from the server's request log, the sampler's own LISTs left out; the summary
gives the requests per bronze commit over the run. The goals are the same on S3.
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import os
import platform
import signal
import statistics
import subprocess
import sys
import tempfile
import threading
import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass, replace
from pathlib import Path

import pyarrow as pa
import pyarrow.compute as pc
from confluent_kafka import Consumer
from confluent_kafka import TopicPartition as KafkaTopicPartition
from deltalake import DeltaTable, QueryBuilder
from deltalake.exceptions import TableNotFoundError
from gamelake_dev.producer.publish import ensure_topic

from bench.run import Lakehouse, _cycled, _env, _load, _payload_pool, _produce
from bench.soak_s3 import ListedSizes, Requests, logged_requests, private_s3, request_summary
from ingest.core.settings.endpoints import Endpoints
from ingest.core.settings.paths import PROJECT_DIR
from ingest.landing.delta.table_location import TableLocation
from ingest.landing.delta.table_scan import scan

RESULTS = PROJECT_DIR / "bench" / "results" / "soak.md"
SAMPLE_EVERY_S = 5.0
S3_SETTINGS = (
    "; lakehouse on s3: a private S3Proxy on loopback (filesystem backend), its request log on; "
    "s3_* columns: the ingest's requests in that minute (service and upkeep), "
    "the sampler's own LISTs left out (sampler_lists_left_out)"
)


def _rss_mb(pids: list[int]) -> float:
    """Resident memory of ``pids`` together, in MB."""
    total = 0
    for proc in pids:
        try:
            status = Path(f"/proc/{proc}/status").read_text()
        except OSError:
            continue
        total += next((int(line.split()[1]) for line in status.splitlines() if line.startswith("VmRSS")), 0)
    return total / 1024


def _cpu_s(pids: list[int]) -> float:
    """CPU seconds of ``pids``, each with its children that have ended (utime+stime+cutime+cstime)."""
    total = 0
    for proc in pids:
        try:
            fields = Path(f"/proc/{proc}/stat").read_text().rsplit(")", 1)[1].split()
        except (OSError, IndexError):
            continue
        total += sum(int(f) for f in fields[11:15])
    return total / os.sysconf("SC_CLK_TCK")


def _children(pid: int) -> list[int]:
    found = []
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            if int(stat.read_text().rsplit(")", 1)[1].split()[1]) == pid:
                found.append(int(stat.parent.name))
        except (OSError, IndexError, ValueError):
            continue
    return found


def _folder(path: Path) -> tuple[int, int]:
    """Files and bytes below ``path``; a file vacuum or log cleanup deletes meanwhile counts 0."""
    count = size = 0
    for entry in path.rglob("*") if path.exists() else []:
        try:
            stat = entry.stat()
        except FileNotFoundError:
            continue
        if entry.is_file():
            count, size = count + 1, size + stat.st_size
    return count, size


def _folder_sizes(bronze: Path) -> dict[str, float]:
    """Bronze's data and ``_delta_log`` files and bytes, from a walk of its folder."""
    log_files, log_bytes = _folder(bronze / "_delta_log")
    all_files, all_bytes = _folder(bronze)
    return {
        "data_files": all_files - log_files,
        "data_mb": (all_bytes - log_bytes) / 1e6,
        "log_files": log_files,
        "log_mb": log_bytes / 1e6,
    }


def _sizes_of(lake: Lakehouse) -> Callable[[], dict[str, float]]:
    """How the sampler sizes bronze: a walk of its folder, or on S3 a listing now and then."""
    if lake.uri is None:
        bronze = lake.warehouse / "bronze" / "game_events"
        return lambda: _folder_sizes(bronze)
    return ListedSizes(TableLocation.of(f"{lake.uri}/bronze/game_events"))


def _sample(pid: int, sizes: Callable[[], dict[str, float]]) -> dict[str, float]:
    sized = sizes()
    children = _children(pid)
    return {
        "at": time.time(),
        "rss_mb": _rss_mb([pid]),
        "upkeep_rss_mb": _rss_mb(children),
        "cpu_s": _cpu_s([pid, *children]),
        **sized,
    }


def _kafka_count(endpoints: Endpoints) -> int:
    consumer = Consumer(
        {"bootstrap.servers": endpoints.bootstrap_servers, "group.id": f"soak-{uuid.uuid4()}"}
    )
    try:
        meta = consumer.list_topics(endpoints.topic, timeout=10).topics[endpoints.topic]
        total = 0
        for partition in meta.partitions:
            low, high = consumer.get_watermark_offsets(
                KafkaTopicPartition(endpoints.topic, partition), timeout=10
            )
            total += high - low
        return total
    finally:
        consumer.close()


def _landed(lake: Lakehouse) -> int:
    try:
        dead = _count(lake.table("dead_letters"))
    except TableNotFoundError:  # no dead letter yet
        dead = 0
    return _count(lake.table("game_events")) + dead


def _count(table: DeltaTable) -> int:
    """Rows, counted by delta-rs's engine: on S3, pyarrow's dataset may abort the process at exit
    (ingest/landing/delta/table_scan.py)."""
    counted = QueryBuilder().register("counted", table).execute("SELECT COUNT(*) FROM counted")
    return int(pa.table(counted).column(0)[0].as_py())


def _per_minute(
    lake: Lakehouse, samples: list[dict[str, float]], requests: Requests | None = None
) -> tuple[list[dict[str, object]], dict[str, float]]:
    """A row per minute of Kafka time (with ``requests``, the ingest's S3 requests in it too),
    and the whole run's p99 and max freshness."""
    stamps = scan(lake.table("game_events"), ["_kafka_timestamp", "_ingested_at"])
    lag_s = pc.divide(
        pc.cast(pc.subtract(stamps["_ingested_at"], stamps["_kafka_timestamp"]), pa.int64()), 1e6
    )
    minute = pc.floor_temporal(stamps["_kafka_timestamp"], unit="minute")
    events = pa.table({"minute": minute, "lag_s": lag_s})
    commits = _commits(lake)
    commit_minute = pc.floor_temporal(commits["logged_at"], unit="minute")
    minutes = sorted(set(minute.to_pylist()))
    rows = []
    for at in minutes:
        lags = events.filter(pc.equal(events["minute"], at))["lag_s"]
        quantiles = pc.quantile(lags, q=[0.5, 0.99])
        commit_ms = commits.filter(pc.equal(commit_minute, at))["commit_ms"]
        near = [s for s in samples if at.timestamp() <= s["at"] < at.timestamp() + 60] or samples[-1:]
        sampled = _sampled(near)
        rows.append(
            {
                "minute": at.strftime("%H:%M"),
                "events": len(lags),
                "p50_s": round(quantiles[0].as_py(), 3),
                "p99_s": round(quantiles[1].as_py(), 3),
                "max_s": round(pc.max(lags).as_py(), 3),
                "commit_ms_mean": round(pc.mean(commit_ms).as_py() or 0, 1),
                "commit_ms_max": round(pc.max(commit_ms).as_py() or 0, 1),
                **sampled,
                **(requests.minute(at.timestamp()) if requests else {}),
            }
        )
    return rows, _whole_run(events, minutes[0])


def _commits(lake: Lakehouse) -> pa.Table:
    """Bronze's commits, as the event log has them: when, and how long each took."""
    log = scan(lake.table("ingest_event_log"), ["kind", "logged_at", "commit_ms"])
    return log.filter(pc.equal(log["kind"], "commit"))


def _whole_run(events: pa.Table, first_minute: object) -> dict[str, float]:
    """p99 and max freshness over every event after the first (partial) minute."""
    later = events.filter(pc.greater(events["minute"], pa.scalar(first_minute, events["minute"].type)))[
        "lag_s"
    ]
    return {
        "p99_s": round(pc.quantile(later, q=0.99)[0].as_py(), 3),
        "max_s": round(pc.max(later).as_py(), 3),
    }


def goals(rows: list[dict[str, object]], whole: dict[str, float], summary: dict[str, object]) -> list[str]:
    """The issue's goals over the run, each met or missed and by how much, as a markdown table.

    Minutes are the full ones: the first and last (partial) minutes are left out. "Steady" RSS is
    the median of the per-minute RSS; CPU is the mean over the minutes of the first phase."""
    full = rows[1:-1]
    rss = [float(str(r["rss_mb"])) for r in full if r["rss_mb"] != ""]
    per_minute = int(str(full[0]["events"]))
    phase_one = [
        float(str(r["cpu_cores"])) for r in full if r["events"] == per_minute and r["cpu_cores"] != ""
    ]
    p50_first = statistics.median(float(str(r["p50_s"])) for r in full[:5])
    p50_last = statistics.median(float(str(r["p50_s"])) for r in full[-5:])
    same_rate = [r for r in full if r["events"] == per_minute]
    p50_aged = statistics.median(float(str(r["p50_s"])) for r in same_rate[-5:])
    checks = [
        ("p99 freshness, whole run", whole["p99_s"], 1.5, "s"),
        ("max freshness, whole run", whole["max_s"], 3.0, "s"),
        ("p50 last 5 min / first 5 min", p50_last / p50_first, 1.1, "x"),
        ("p50 last 5 min of the first phase / first 5 min (same rate)", p50_aged / p50_first, 1.1, "x"),
        ("RSS at the end / at minute 5", rss[-1] / rss[min(4, len(rss) - 1)], 1.1, "x"),
        ("peak RSS / steady median", max(rss) / statistics.median(rss), 1.5, "x"),
        (
            f"CPU cores at {per_minute / 60:,.0f} events/s (mean)",
            statistics.fmean(phase_one),
            0.22,
            "cores",
        ),
    ]
    lines = ["| goal | measured | limit | verdict |", "| --- | ---: | ---: | --- |"]
    for name, value, limit, unit in checks:
        verdict = (
            "met"
            if value <= limit
            else f"missed by {value - limit:.2f} {unit} ({value / limit:.2f}x the limit)"
        )
        lines.append(f"| {name} | {value:.2f} {unit} | {limit} {unit} | {verdict} |")
    equal = summary["kafka"] == summary["bronze_plus_dead_letters"]
    lines.append(
        f"| Kafka = bronze + dead letters | {summary['kafka']:,} / {summary['bronze_plus_dead_letters']:,} "
        f"| equal | {'met' if equal else 'missed'} |"
    )
    return lines


def _sampled(near: list[dict[str, float]]) -> dict[str, object]:
    """The samples' columns for one minute; blank where the sampler has none."""
    if not near:
        return dict.fromkeys(
            ("rss_mb", "upkeep_rss_mb", "cpu_cores", "data_files", "data_mb", "log_files", "log_mb"), ""
        )
    cpu_cores = (near[-1]["cpu_s"] - near[0]["cpu_s"]) / max(near[-1]["at"] - near[0]["at"], 1e-9)
    return {
        "rss_mb": round(max(s["rss_mb"] for s in near)),
        "upkeep_rss_mb": round(max(s["upkeep_rss_mb"] for s in near)),
        "cpu_cores": round(cpu_cores, 2),
        "data_files": int(near[-1]["data_files"]),
        "data_mb": round(near[-1]["data_mb"]),
        "log_files": int(near[-1]["log_files"]),
        "log_mb": round(near[-1]["log_mb"], 1),
    }


def _produce_phases(
    endpoints: Endpoints, pool: list[tuple[bytes, bytes]], phases: list[tuple[float, float]]
) -> None:
    """Produce each (minutes, rate) phase in turn."""
    for minutes, rate in phases:
        _produce(endpoints, _cycled(pool), int(rate * minutes * 60), rate)


def soak(
    phases: list[tuple[float, float]],
    compact_every: int,
    retention_hours: tuple[int, int] = (48, 168),
    s3: bool = False,
) -> tuple[list[dict[str, object]], dict[str, object]]:
    """The soak on a fresh local folder, or with ``s3`` at a fresh prefix of a private S3Proxy."""
    if not s3:
        lake = Lakehouse(Path(tempfile.mkdtemp(prefix="gamelake-soak-")))
        return _soak(phases, compact_every, retention_hours, lake)
    with private_s3() as (lake, requests_log):
        return _soak(phases, compact_every, retention_hours, lake, requests_log)


@dataclass(frozen=True)
class _Run:
    """What the harness saw while the service ran."""

    samples: list[dict[str, float]]
    produced: int  # the topic's records in Kafka
    window: tuple[float, float]  # epoch seconds: the service's start, the end of production
    load_before: float
    started: float  # monotonic, at the producer's start


def _soak(
    phases: list[tuple[float, float]],
    compact_every: int,
    retention_hours: tuple[int, int],
    lake: Lakehouse,
    requests_log: Path | None = None,
) -> tuple[list[dict[str, object]], dict[str, object]]:
    endpoints = replace(Endpoints.from_env(), topic=f"soak-{uuid.uuid4().hex[:8]}")
    ensure_topic(endpoints, 6)
    env = _env(
        endpoints,
        lake.warehouse,
        compact_every_commits=compact_every,
        log_level="INFO",
        log_retention_hours=retention_hours[0],
        vacuum_retention_hours=retention_hours[1],
        **lake.settings(),
    )
    log_path = lake.warehouse / "ingest.log"
    run = _run(endpoints, env, phases, lake, log_path)
    requests = logged_requests(requests_log, lake.uri, run.window) if requests_log and lake.uri else None
    rows, whole = _per_minute(lake, run.samples, requests)
    summary: dict[str, object] = {
        "whole_run": whole,
        "minutes": round((time.monotonic() - run.started) / 60, 1),
        "kafka": run.produced,
        "bronze_plus_dead_letters": _landed(lake),
        "compactions": log_path.read_text().count('"event":"compaction"') if log_path.exists() else None,
        "bronze_live_mb": _live_mb(lake),
        "bronze_rewritten_mb": round(_rewritten_bytes(log_path) / 1e6),
        "load_avg_1m_before_after": [run.load_before, _load()],
    }
    if requests is not None:
        summary.update(request_summary(requests, _commits_between(lake, run.window)))
    return rows, summary


def _run(
    endpoints: Endpoints,
    env: dict[str, str],
    phases: list[tuple[float, float]],
    lake: Lakehouse,
    log_path: Path,
) -> _Run:
    """The service beside the producer, sampled, until bronze and dead letters hold every record."""
    pool = _payload_pool(endpoints)
    started_at = time.time()
    with open(log_path, "wb") as log:
        service = subprocess.Popen(
            [sys.executable, "-m", "ingest.cli", "run"], env=env, cwd=PROJECT_DIR, stdout=log, stderr=log
        )
    # A daemon: were the harness to fail, the producer must not outlive it.
    producer = threading.Thread(target=_produce_phases, args=(endpoints, pool, phases), daemon=True)
    load_before, started = _load(), time.monotonic()
    producer.start()
    samples: list[dict[str, float]] = []
    sizes = _sizes_of(lake)
    try:
        while producer.is_alive():
            samples.append(_sample(service.pid, sizes))
            time.sleep(SAMPLE_EVERY_S)
        produced_at = time.time()
        produced = _kafka_count(endpoints)
        deadline = time.monotonic() + 120
        while _landed(lake) < produced and time.monotonic() < deadline:
            time.sleep(1)
    finally:
        service.send_signal(signal.SIGTERM)
        service.wait(timeout=120)
    return _Run(samples, produced, (started_at, produced_at), load_before, started)


def _commits_between(lake: Lakehouse, window: tuple[float, float]) -> int:
    """Bronze's commits logged from ``window[0]`` to ``window[1]`` (epoch seconds)."""
    return sum(window[0] <= at.timestamp() <= window[1] for at in _commits(lake)["logged_at"].to_pylist())


def _live_mb(lake: Lakehouse) -> float:
    """The data bronze's current version references, in MB."""
    sizes = lake.table("game_events").get_add_actions().column("size_bytes").to_pylist()
    return round(sum(sizes) / 1e6)


def _rewritten_bytes(log_path: Path) -> int:
    """Bytes bronze's compactions read and wrote again over the run (their removed files)."""
    total = 0
    for line in log_path.read_text().splitlines():
        if '"event":"compaction"' in line:
            total += json.loads(line)["result"].get("game_events", {}).get("bytesRewritten", 0)
    return total


def _record(rows: list[dict[str, object]], summary: dict[str, object], args: argparse.Namespace) -> None:
    python = platform.python_version()
    machine = f"{platform.node()} · {platform.machine()} · {os.cpu_count()} cores · Python {python}"
    header = "| " + " | ".join(rows[0]) + " |" if rows else ""
    lines = [
        f"\n## {dt.datetime.now(dt.UTC):%Y-%m-%d %H:%M} UTC",
        f"- machine: {machine}",
        f"- settings: {vars(args)}{S3_SETTINGS if args.s3 else ''}",
        f"- summary: {summary}",
        "",
        header,
        "| " + " | ".join("---" for _ in rows[0]) + " |" if rows else "",
        *("| " + " | ".join(str(v) for v in row.values()) + " |" for row in rows),
        "",
        *goals(rows, summary["whole_run"], summary),  # type: ignore[arg-type]
    ]
    RESULTS.parent.mkdir(parents=True, exist_ok=True)
    with open(RESULTS, "a") as out:
        out.write("\n".join(lines) + "\n")
    print("\n".join(lines))


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--minutes", type=float, default=120)
    parser.add_argument("--rate", type=float, default=10_000)
    parser.add_argument("--then-minutes", type=float, default=0, help="a second phase, after the first")
    parser.add_argument("--then-rate", type=float, default=20_000)
    parser.add_argument("--compact-every", type=int, default=100, help="compact_every_commits")
    # 1 and 1 show, in a run of over an hour, that the log and the data folder stop growing.
    parser.add_argument("--log-retention-hours", type=int, default=48, help="log_retention_hours")
    parser.add_argument("--vacuum-retention-hours", type=int, default=168, help="vacuum_retention_hours")
    parser.add_argument(
        "--s3", action="store_true", help="the lakehouse on a private S3Proxy, its requests counted"
    )
    args = parser.parse_args()
    # SIGTERM as an exception, so that soak()'s ``finally`` stops the service.
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))
    retention = (args.log_retention_hours, args.vacuum_retention_hours)
    phases = [(args.minutes, args.rate)]
    if args.then_minutes:
        phases.append((args.then_minutes, args.then_rate))
    rows, summary = soak(phases, args.compact_every, retention, args.s3)
    _record(rows, summary, args)
    return 0 if summary["kafka"] == summary["bronze_plus_dead_letters"] else 1


if __name__ == "__main__":
    raise SystemExit(main())
