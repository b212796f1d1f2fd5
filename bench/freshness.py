"""Freshness of every layer in continuous mode: producer, ingest and refresh on one machine.

    python -m bench.freshness [--minutes 10] [--rate 20000] [--min-interval 10] [--event-times live]

The local stack must be up (``make stack-up``). On a fresh 6-partition topic and a private
warehouse and dbt project (the stock 5 games), ``ingest run`` and ``ingest refresh --continuous``
run as an operator runs them. After the refresh's first build, a producer sends ``--rate`` events
per second for ``--minutes``, every event with its own event_id, stamped with the second it is
sent (``--event-times live``, a game in play) or with the pool's times in a week long past
(``replay``, a backfill: every batch spans the week, so silver's dedup reads each game's whole
week of silver rows in every build, and that read grows with the run). When gold has caught up, both
services are stopped with SIGTERM and every event's delay is read back from the Delta logs:

- bronze: ``_ingested_at - _kafka_timestamp`` (the ingest stamps rows as it commits them);
- silver: the time of the silver commit that added the event - its Kafka timestamp;
- gold: the time of the first commit of the game's ``player_agg`` and ``daily_active`` (the later
  of the two) whose rows carry a ``silver_version`` at or past the event's silver version.

Per minute of Kafka time and over the whole run: p50, p99 and max per layer, with the refresh's
build times, CPU load and each process's memory. Exactly once: Kafka = bronze + dead letters,
and the events counted in gold = the rows in silver = distinct events in bronze.
Results are appended to bench/results/freshness.md with the machine and date.
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import os
import platform
import re
import shutil
import signal
import subprocess
import sys
import threading
import time
import urllib.request
import uuid
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path
from typing import Any
from urllib.parse import unquote

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq
from deltalake import DeltaTable
from gamelake_dev.producer.publish import ensure_topic
from google.protobuf.timestamp_pb2 import Timestamp

from bench.incremental import STOCK_GAMES, _copy_project
from bench.run import Lakehouse, _env, _event_pool, _load, _produce
from bench.soak import _kafka_count, _landed, _rss_mb
from ingest.core.settings.endpoints import Endpoints
from ingest.core.settings.paths import PROJECT_DIR

RESULTS = PROJECT_DIR / "bench" / "results" / "freshness.md"
REFRESH_PORT = 9397
WARM_UP_EVENTS = 2000
SAMPLE_EVERY_S = 5.0
GOLD_TABLES = ("player_agg", "daily_active")


def _renumbered(
    pool: list[tuple[bytes, bytes, bytes, bytes]], event_times: str
) -> Callable[[int], tuple[bytes, bytes]]:
    """The pool's events cycled, the i-th with event_id i (same width, so the framing holds); with
    ``live`` event times each is stamped with the second it is sent, as a game in play stamps
    its events, and with ``replay`` it keeps the pool's time in the week before its anchor."""

    def payload(i: int) -> tuple[bytes, bytes]:
        key, value, event_id, stamp = pool[i % len(pool)]
        value = value.replace(event_id, f"{i:0{len(event_id)}d}".encode(), 1)
        if event_times == "live":
            value = value.replace(stamp, _stamped_now(stamp), 1)
        return key, value

    return payload


def _stamped_now(stamp: bytes) -> bytes:
    """The serialized Timestamp ``stamp`` moved to this second, its nanos kept: the same length
    (both seconds are five-byte varints), so the framing around it holds."""
    moved = Timestamp.FromString(stamp)
    moved.seconds = int(time.time())
    now = moved.SerializeToString()
    assert len(now) == len(stamp), "an event time of another varint width would break the framing"
    return now


def _metrics(port: int) -> dict[str, float]:
    try:
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=5) as response:
            text = response.read().decode()
    except OSError:
        return {}
    return {m[1]: float(m[2]) for m in re.finditer(r"^(gamelake_\S+) (\S+)$", text, re.M)}


def _wait(condition: Callable[[], bool], timeout_s: float, what: str) -> None:
    deadline = time.monotonic() + timeout_s
    while not condition():
        if time.monotonic() > deadline:
            raise SystemExit(f"freshness: timed out after {timeout_s:.0f} s waiting for {what}")
        time.sleep(1)


def _commits(table: Path) -> list[tuple[int, float, list[Path]]]:
    """(version, commit time in epoch s, data files it added) of each commit that added data."""
    out = []
    for log in sorted((table / "_delta_log").glob("*.json")):
        stamp, added = log.stat().st_mtime, []
        for line in log.read_text().splitlines():
            action = json.loads(line)
            if "commitInfo" in action and "timestamp" in action["commitInfo"]:
                stamp = action["commitInfo"]["timestamp"] / 1000
            add = action.get("add")
            if add and add.get("dataChange", True):
                added.append(table / unquote(add["path"]))
        if added:
            out.append((int(log.stem), stamp, added))
    return out


def _seconds(timestamps: pa.Array) -> pa.Array:
    return pc.divide(pc.cast(pc.cast(timestamps, pa.timestamp("us")), pa.int64()), 1e6)


_SILVER_DELAYS = pa.schema(
    [("kafka_s", pa.float64()), ("silver_version", pa.int64()), ("silver_s", pa.float64())]
)


def _silver_delays(table: Path) -> pa.Table:
    """Per silver row: its Kafka time (s), its silver version and the delay to that commit."""
    parts = []
    for version, stamp, files in _commits(table):
        for file in files:
            kafka = _seconds(pq.read_table(file, columns=["kafka_published_at"]).column(0).combine_chunks())
            parts.append(
                pa.table(
                    {
                        "kafka_s": kafka,
                        "silver_version": pa.repeat(pa.scalar(version, pa.int64()), len(kafka)),
                        "silver_s": pc.subtract(stamp, kafka),
                    }
                )
            )
    return pa.concat_tables(parts) if parts else _SILVER_DELAYS.empty_table()


def _gold_visible(table: Path) -> list[tuple[int, float]]:
    """(silver version reached, time) per gold commit, in commit order."""
    reached = []
    for _, stamp, files in _commits(table):
        marks = [pc.max(pq.read_table(f, columns=["silver_version"]).column(0)).as_py() for f in files]
        reached.append((max(m for m in marks if m is not None), stamp))
    return reached


def _gold_time(visible: list[tuple[int, float]], silver_version: int) -> float | None:
    return min((stamp for mark, stamp in visible if mark >= silver_version), default=None)


def _layer_delays(warehouse: Path, since_s: float) -> pa.Table:
    """One row per event in silver produced after ``since_s``: kafka_s, silver_s, gold_s."""
    spark = warehouse / "spark"
    parts = []
    for game in STOCK_GAMES:
        silver = spark / "silver.db" / f"silver_{game}"
        if not silver.exists():
            continue
        rows = _silver_delays(silver)
        gold = [_gold_visible(spark / "gold.db" / f"gold_{game}_{kind}") for kind in GOLD_TABLES]
        versions = sorted(set(rows["silver_version"].to_pylist()))
        when = {v: [_gold_time(g, v) for g in gold] for v in versions}
        reached = {v: None if None in t else max(x for x in t if x is not None) for v, t in when.items()}
        gold_at = pa.array([reached[v] for v in rows["silver_version"].to_pylist()], pa.float64())
        parts.append(rows.append_column("gold_s", pc.subtract(gold_at, rows["kafka_s"])))
    delays = pa.concat_tables(parts)
    return delays.filter(pc.greater_equal(delays["kafka_s"], since_s))


def _bronze_delays(warehouse: Path, since_s: float) -> pa.Table:
    bronze = DeltaTable(str(warehouse / "bronze" / "game_events")).to_pyarrow_dataset()
    stamps = bronze.to_table(columns=["_kafka_timestamp", "_ingested_at"])
    kafka = _seconds(stamps["_kafka_timestamp"])
    delays = pa.table({"kafka_s": kafka, "bronze_s": pc.subtract(_seconds(stamps["_ingested_at"]), kafka)})
    return delays.filter(pc.greater_equal(delays["kafka_s"], since_s))


def _quantiles(values: pa.Array) -> dict[str, float | None]:
    values = pc.drop_null(values)
    if len(values) == 0:
        return {"p50": None, "p99": None, "max": None}
    p50, p99 = pc.quantile(values, q=[0.5, 0.99]).to_pylist()
    return {"p50": round(p50, 2), "p99": round(p99, 2), "max": round(pc.max(values).as_py(), 2)}


def _per_minute(bronze: pa.Table, layers: pa.Table, samples: list[dict[str, float]]) -> list[dict[str, Any]]:
    rows = []
    start = int(pc.min(bronze["kafka_s"]).as_py() // 60 * 60)
    end = int(pc.max(bronze["kafka_s"]).as_py())
    for minute in range(start, end + 1, 60):

        def within(table: pa.Table, minute: int = minute) -> pa.Table:
            after = pc.greater_equal(table["kafka_s"], minute)
            return table.filter(pc.and_(after, pc.less(table["kafka_s"], minute + 60)))

        b, lay = within(bronze), within(layers)
        near = [s for s in samples if minute <= s["at"] < minute + 60] or samples[-1:]
        row: dict[str, Any] = {"minute": dt.datetime.fromtimestamp(minute, dt.UTC).strftime("%H:%M")}
        row["events"] = b.num_rows
        for name, column in (("bronze", b["bronze_s"]), ("silver", lay["silver_s"]), ("gold", lay["gold_s"])):
            q = _quantiles(column)
            row[f"{name}_p50"], row[f"{name}_p99"] = q["p50"], q["p99"]
        row["load_1m"] = round(max(s["load"] for s in near), 2)
        row["ingest_rss_mb"] = round(max(s["ingest_mb"] for s in near))
        row["refresh_rss_mb"] = round(max(s["refresh_mb"] for s in near))
        rows.append(row)
    return rows


def _gold_event_count(warehouse: Path) -> int:
    total = 0
    for game in STOCK_GAMES:
        path = warehouse / "spark" / "gold.db" / f"gold_{game}_player_agg"
        if path.exists():
            column = DeltaTable(str(path)).to_pyarrow_table(columns=["event_count"]).column(0)
            total += pc.sum(column).as_py() or 0
    return total


def _silver_rows(warehouse: Path) -> int:
    paths = [warehouse / "spark" / "silver.db" / f"silver_{g}" for g in STOCK_GAMES]
    return sum(DeltaTable(str(p)).to_pyarrow_dataset().count_rows() for p in paths if p.exists())


def _distinct_bronze_events(warehouse: Path) -> int:
    bronze = DeltaTable(str(warehouse / "bronze" / "game_events")).to_pyarrow_dataset()
    return len(pc.unique(bronze.to_table(columns=["event_id"]).column(0)))


def _start(command: list[str], env: dict[str, str], cwd: Path, log: Path) -> subprocess.Popen[bytes]:
    with log.open("wb") as out:
        return subprocess.Popen(command, env=env, cwd=cwd, stdout=out, stderr=subprocess.STDOUT)


def _stop(process: subprocess.Popen[bytes], name: str) -> int:
    process.send_signal(signal.SIGTERM)
    try:
        return process.wait(300)
    except subprocess.TimeoutExpired:
        process.kill()
        raise SystemExit(f"freshness: {name} did not stop within 300 s of SIGTERM") from None


def _caught_up(warehouse: Path, produced: int, built: bool = True) -> Callable[[], bool]:
    """Bronze + dead letters hold ``produced`` events and, if ``built``, a build covered bronze."""
    bronze = warehouse / "bronze" / "game_events"

    def done() -> bool:
        if not (bronze / "_delta_log").exists() or _landed(Lakehouse(warehouse)) < produced:
            return False
        if not built:
            return True
        covered = _metrics(REFRESH_PORT).get("gamelake_refresh_bronze_version", -1)
        return covered >= DeltaTable(str(bronze)).version()

    return done


_BUILD_LINE = re.compile(r"refresh: build ok in (\S+) s, bronze version \d+, (\d+) new bronze rows")


def _builds(log: Path) -> dict[str, Any]:
    """Seconds and new bronze rows of the builds after the first (which reads the warm-up)."""
    found = [(float(s), int(n)) for s, n in _BUILD_LINE.findall(log.read_text())][1:]
    if not found:
        return {}
    seconds = sorted(s for s, _ in found)
    rows = sorted(n for _, n in found)
    return {
        "builds": len(found),
        "build_s_p50": seconds[len(seconds) // 2],
        "build_s_max": seconds[-1],
        "new_rows_p50": rows[len(rows) // 2],
        "new_rows_max": rows[-1],
    }


def measure(
    minutes: float, rate: float, min_interval: float, max_versions: int, workdir: Path, event_times: str
) -> dict[str, Any]:
    endpoints = replace(Endpoints.from_env(), topic=f"fresh-{uuid.uuid4().hex[:8]}")
    ensure_topic(endpoints, 6)
    payload = _renumbered(_event_pool(endpoints), event_times)
    shutil.rmtree(workdir, ignore_errors=True)
    project, warehouse = workdir / "project", workdir / "warehouse"
    project.mkdir(parents=True)
    _copy_project(project, STOCK_GAMES)
    (project / ".cache").symlink_to(PROJECT_DIR / ".cache")  # the Delta jars
    ingest = _start(
        [sys.executable, "-m", "ingest.cli", "run"],
        _env(endpoints, warehouse, log_level="INFO"),
        PROJECT_DIR,
        workdir / "ingest.log",
    )
    _produce(endpoints, payload, WARM_UP_EVENTS, rate=None)
    _wait(_caught_up(warehouse, WARM_UP_EVENTS, built=False), 120, "the warm-up events in bronze")
    refresh_env = {**os.environ, "GAMELAKE_HOME": str(project), "GAMELAKE_WAREHOUSE_DIR": str(warehouse)}
    refresh_env.pop("GAMELAKE_BRONZE_PATH", None)
    refresh_command = ["refresh", "--continuous", "--min-interval", str(min_interval)]
    refresh_command += ["--max-versions-per-build", str(max_versions)]
    refresh = _start(
        [sys.executable, "-m", "ingest.cli", *refresh_command, "--metrics-port", str(REFRESH_PORT)],
        refresh_env,
        project,
        workdir / "refresh.log",
    )
    _wait(_caught_up(warehouse, WARM_UP_EVENTS), 600, "the refresh's first build")
    print("freshness: warm; producing", flush=True)

    count = int(rate * minutes * 60)
    shifted = lambda i: payload(i + WARM_UP_EVENTS)  # noqa: E731
    producer = threading.Thread(target=_produce, args=(endpoints, shifted, count, rate))
    since_s, load_before = time.time(), _load()
    producer.start()
    samples: list[dict[str, float]] = []
    while producer.is_alive():
        samples.append(
            {
                "at": time.time(),
                "load": os.getloadavg()[0],
                "ingest_mb": _rss_mb([ingest.pid]),
                "refresh_mb": _rss_mb([refresh.pid]),
            }
        )
        time.sleep(SAMPLE_EVERY_S)
    produced = _kafka_count(endpoints)
    print(f"freshness: {produced} events produced; waiting for gold to catch up", flush=True)
    drained = time.time()
    _wait(_caught_up(warehouse, produced), 1800, "gold to cover every event")
    drain_s = time.time() - drained
    refresh_metrics = _metrics(REFRESH_PORT)
    codes = {"ingest": _stop(ingest, "ingest"), "refresh": _stop(refresh, "refresh")}

    bronze = _bronze_delays(warehouse, since_s)
    layers = _layer_delays(warehouse, since_s)
    builds = refresh_metrics.get('gamelake_refresh_builds_total{outcome="ok"}', 0)
    summary = {
        "events_measured": bronze.num_rows,
        "load_avg_1m_before_after": [load_before, _load()],
        "drain_after_producer_s": round(drain_s, 1),
        "refresh_builds_ok": builds,
        "refresh_builds_failed": refresh_metrics.get('gamelake_refresh_builds_total{outcome="failed"}'),
        "mean_build_s": round(
            refresh_metrics.get("gamelake_refresh_build_seconds_sum", 0)
            / max(refresh_metrics.get("gamelake_refresh_build_seconds_count", 1), 1),
            1,
        ),
        "kafka": produced,
        "bronze_plus_dead_letters": _landed(Lakehouse(warehouse)),
        "distinct_bronze_events": _distinct_bronze_events(warehouse),
        "silver_rows": _silver_rows(warehouse),
        "gold_event_count": _gold_event_count(warehouse),
        "exit_codes": codes,
        "per_build": _builds(workdir / "refresh.log"),
    }
    for name, column in (
        ("bronze", bronze["bronze_s"]),
        ("silver", layers["silver_s"]),
        ("gold", layers["gold_s"]),
    ):
        summary[name] = _quantiles(column)
    return {"summary": summary, "minutes": _per_minute(bronze, layers, samples)}


def _record(result: dict[str, Any], args: argparse.Namespace) -> None:
    summary, rows = result["summary"], result["minutes"]
    python = platform.python_version()
    machine = f"{platform.node()} · {platform.machine()} · {os.cpu_count()} cores · Python {python}"
    lines = [
        f"\n## {dt.datetime.now(dt.UTC):%Y-%m-%d %H:%M} UTC: {args.rate:,.0f} events/s, {args.minutes:g} min",
        f"- machine: {machine}",
        f"- settings: {args.rate:,.0f} events/s for {args.minutes:g} min, "
        f"`ingest refresh --continuous --min-interval {args.min_interval:g} "
        f"--max-versions-per-build {args.max_versions_per_build}`; event times: {args.event_times}",
        "",
        "| layer | p50 s | p99 s | max s |",
        "|---|---|---|---|",
        *(
            f"| produce → {name} | {summary[name]['p50']} | {summary[name]['p99']} | {summary[name]['max']} |"
            for name in ("bronze", "silver", "gold")
        ),
        "",
        f"- summary: { {k: v for k, v in summary.items() if k not in ('bronze', 'silver', 'gold')} }",
        "",
        "| " + " | ".join(rows[0]) + " |",
        "| " + " | ".join("---" for _ in rows[0]) + " |",
        *("| " + " | ".join(str(v) for v in row.values()) + " |" for row in rows),
    ]
    if not RESULTS.exists():
        RESULTS.write_text(
            "# Freshness in continuous mode: produce → bronze → silver → gold\n\n"
            "Recorded by `make bench-freshness`.\n"
        )
    with RESULTS.open("a") as out:
        out.write("\n".join(lines) + "\n")
    print("\n".join(lines))


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--minutes", type=float, default=10)
    parser.add_argument("--rate", type=float, default=20_000)
    parser.add_argument("--min-interval", type=float, default=10)
    parser.add_argument("--max-versions-per-build", type=int, default=60)
    parser.add_argument(
        "--event-times",
        choices=("live", "replay"),
        default="live",
        help="live: each event stamped when sent; replay: the pool's week of times again and again",
    )
    parser.add_argument("--workdir", type=Path, default=PROJECT_DIR / ".cache" / "bench-freshness")
    args = parser.parse_args()
    result = measure(
        args.minutes,
        args.rate,
        args.min_interval,
        args.max_versions_per_build,
        args.workdir.resolve(),
        args.event_times,
    )
    _record(result, args)
    s = result["summary"]
    exact = s["kafka"] == s["bronze_plus_dead_letters"] and s["silver_rows"] == s["gold_event_count"]
    return 0 if exact else 1


if __name__ == "__main__":
    raise SystemExit(main())
