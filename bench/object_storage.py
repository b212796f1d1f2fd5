"""Landing on S3 against landing on a local disk, in one run on one machine.

    python -m bench.object_storage [--events 400000] [--rate 20000] [--seconds 20] [--upkeep-every 0]

For each place: ingest throughput with 1 and with 2 instances (``bench.run.throughput``), and
produce -> bronze p50/p99 at ``--rate`` events/s (``bench.run.freshness``). S3 is a private
S3Proxy started for the run on loopback, with its request log on, so the requests of the
freshness run are counted by table and method. "Per commit" counts the requests between the
run's first and last bronze commit, divided by the commits in between: startup (table creation,
the first reads) is left out. ``--upkeep-every N`` runs the service's upkeep (compaction,
checkpoints, log cleanup, vacuum) every N commits in the freshness runs, so its requests are
counted too. Results: bench/results/object_storage.md.
"""

from __future__ import annotations

import argparse
import datetime as dt
import os
import re
import socket
import sys
import tempfile
import uuid
from collections import Counter
from pathlib import Path

from gamelake_dev.localstack import process
from gamelake_dev.localstack.object_store import LocalS3, local_s3, s3_server

from bench.results_file import append_section
from bench.run import Lakehouse, freshness, throughput
from ingest.core.settings.endpoints import Endpoints
from ingest.core.settings.paths import PROJECT_DIR

RESULTS = PROJECT_DIR / "bench" / "results" / "object_storage.md"
# S3Proxy's debug line for a request:
# "... 11-26 12:45:05.501 ... request: ...{PUT@6a90 http://host:port/bucket/key HTTP/1.1}"
_REQUEST = re.compile(r" (\d\d-\d\d \d\d:\d\d:\d\d\.\d{3}) .*request: .*\{(\w+)@\w+ http://[^/]+/(\S*) HTTP/")


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def _start_s3(folder: Path) -> tuple[process.Server, LocalS3]:
    server = s3_server(folder, _free_port())
    server.env["LOG_LEVEL"] = "debug"  # one line per request, counted below
    process.start(server)
    where = local_s3(folder, server.ports["S3_PORT"])
    for name in [name for name in os.environ if name.startswith("AWS_")]:
        del os.environ[name]
    os.environ.update(where.client_environment())
    return server, where


def _requests(log: Path, start: dt.datetime, end: dt.datetime) -> Counter[str]:
    """Requests logged from ``start`` to ``end`` (UTC), by table and method."""
    counts: Counter[str] = Counter()
    for line in log.read_text(errors="replace").splitlines():
        match = _REQUEST.search(line)
        if not match:
            continue
        at = dt.datetime.strptime(f"{start.year}-{match[1]}", "%Y-%m-%d %H:%M:%S.%f").replace(tzinfo=dt.UTC)
        if start <= at <= end:
            counts[f"{_table_of(match[3])} {match[2]}"] += 1
    return counts


def _table_of(path: str) -> str:
    for name in ("game_events", "ingest_event_log", "dead_letters"):
        if f"/{name}/" in path or f"%2F{name}%2F" in path or f"/{name}?" in path:
            return f"{name} {'log' if '_delta_log' in path else 'data'}"
    return "other"


def _commit_window(lake: Lakehouse) -> tuple[dt.datetime, dt.datetime, int]:
    history = [h for h in lake.table("game_events").history() if h.get("operation") == "WRITE"]
    stamps = sorted(dt.datetime.fromtimestamp(h["timestamp"] / 1000, dt.UTC) for h in history)
    return stamps[0], stamps[-1], len(stamps) - 1


def _endpoints(base: Endpoints, kind: str) -> Endpoints:
    return Endpoints(base.bootstrap_servers, base.registry_url, f"bench-{kind}-{uuid.uuid4().hex[:8]}")


_RATES = {"events_per_s": "overall", "steady_events_per_s": "steady"}


def _ratio(rows: dict[str, dict[str, object]], instances: int, key: str) -> str:
    local, s3 = rows[f"local disk, {instances} instance(s)"], rows[f"S3, {instances} instance(s)"]
    if not local.get(key) or not s3.get(key):
        return f"- throughput ({_RATES[key]}), {instances} instance(s): no figure (no steady state)"
    ratio = float(s3[key]) / float(local[key])  # type: ignore[arg-type]
    return f"- throughput ({_RATES[key]}), {instances} instance(s), S3 against local disk: {ratio:.2f}x"


def main() -> int:
    parser = argparse.ArgumentParser(prog="bench.object_storage")
    parser.add_argument("--events", type=int, default=400_000)
    parser.add_argument("--rate", type=float, default=20_000)
    parser.add_argument("--seconds", type=float, default=20)
    parser.add_argument(
        "--upkeep-every", type=int, default=0, help="compact_every_commits of the freshness runs (0: off)"
    )
    args = parser.parse_args()
    base = Endpoints.from_env()
    server, where = _start_s3(Path(tempfile.mkdtemp(prefix="gamelake-bench-s3-")))
    body = [f"- settings: {vars(args)}; S3: S3Proxy on loopback, filesystem backend, request log on"]
    rows: dict[str, dict[str, object]] = {}
    try:
        for place, bucket in (("local disk", None), ("S3", where.bucket)):
            for instances in (1, 2):
                rows[f"{place}, {instances} instance(s)"] = throughput(
                    _endpoints(base, "tp"), args.events, instances, 100_000, Lakehouse.fresh(bucket)
                )
            lake = Lakehouse.fresh(bucket)
            fresh = freshness(_endpoints(base, "fr"), args.rate, args.seconds, 0.5, lake, args.upkeep_every)
            rows[f"{place}, freshness"] = fresh
            if bucket:
                start, end, commits = _commit_window(lake)
                counts = _requests(server.log_file, start, end)
                per_commit = {key: round(n / commits, 2) for key, n in sorted(counts.items())}
                landing = sum(n for key, n in counts.items() if not key.startswith(("dead_letters", "other")))
                rows["S3 requests per bronze commit"] = {
                    "bronze and event log": round(landing / commits, 2),
                    "commits counted": commits,
                    **per_commit,
                }
    finally:
        process.stop(server)
    body += [f"- {name}: {value}" for name, value in rows.items()]
    body += [_ratio(rows, instances, key) for instances in (1, 2) for key in _RATES]
    title = "Landing on S3 against a local disk"
    append_section(RESULTS, title, body, heading="# Landing on object storage\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
