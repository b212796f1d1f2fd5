"""The S3 requests of the continuous refresh's cycles, with the whole lakehouse on S3.

    python -m bench.refresh_requests [--games 5] [--cycles 5] [--new 6000] [--history 30000]
                                     [--gold-threads 2]

A private S3Proxy with its request log on holds bronze and dbt's tables under one prefix, as
``GAMELAKE_INGEST_WAREHOUSE_URI`` puts them; the Derby metastore stays on the local disk. In one
Spark session: bronze gets ``--history`` events of ``--games`` games, then ``dbt seed`` and a first
``dbt build``. Each of ``--cycles`` refresh cycles (as ``ingest refresh --continuous`` runs them,
``bench.refresh_profile._cycle``: the reads of bronze and the marks with delta-rs, the build
lock, the slice, the games' builds, the upkeep) follows a landing of ``--new`` events for every
game, which is left out of the count. Requests are counted from the server's log over each
cycle, by table family (bronze, silver, gold, the build lock, the slice, the catalog's other
tables) and by log or data and method. What a minute of back-to-back cycles costs is worked out
from them. The same cycles run on a local disk first, each side in a process and Spark JVM of
its own, for the ratio of their times. Results: bench/results/object_storage.md.
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
import uuid
from collections import Counter
from pathlib import Path
from urllib.parse import unquote

from gamelake_dev.localstack import process

from bench.incremental import STOCK_GAMES, _bronze_rows, _copy_project, _land
from bench.object_storage import _REQUEST, RESULTS, _start_s3
from bench.refresh_profile import _cycle
from bench.results_file import append_section
from ingest.landing.delta.table_location import TableLocation
from ingest.ops.bronze_marks import ReaderMarks
from ingest.ops.bronze_watch import BronzeWatch
from ingest.ops.lakehouse_checkpoints import DEFAULT_LOG_HOURS
from ingest.ops.lakehouse_upkeep import UpkeepPolicy
from ingest.ops.refresh_command import DEFAULT_GOLD_THREADS
from ingest.ops.warm_dbt import WarmDbt

_FAMILIES = (
    ("/bronze/", "bronze"),
    ("/gamelake_build_lock", "build lock"),
    ("/stg_bronze__new_events", "slice"),
    ("/silver.db/", "silver"),
    ("/gold.db/", "gold"),
)


def family(key: str) -> str:
    """``family part method``-less label of a logged key: which tables, log or data."""
    key = unquote(key)
    name = next((label for marker, label in _FAMILIES if marker in key), "other")
    if "list-type=2" in key or "?prefix=" in key or "&prefix=" in key:
        return f"{name} listing"
    return f"{name} {'log' if '_delta_log' in key else 'data'}"


def _logged(log: Path, year: int) -> list[tuple[dt.datetime, str]]:
    found = []
    for line in log.read_text(errors="replace").splitlines():
        match = _REQUEST.search(line)
        if match:
            at = dt.datetime.strptime(f"{year}-{match[1]}", "%Y-%m-%d %H:%M:%S.%f").replace(tzinfo=dt.UTC)
            found.append((at, f"{family(match[3])} {match[2]}"))
    return found


def _side(storage: str, args: argparse.Namespace) -> dict[str, object]:
    """The cycles on ``storage`` ("s3" or "local disk"): their times, and on S3 their requests."""
    from ingest.core.spark.session import local_session

    root = Path(tempfile.mkdtemp(prefix="gamelake-bench-refresh-"))
    server, where = _start_s3(root / "s3") if storage == "s3" else (None, None)
    lake = f"s3://{where.bucket}/refresh-{uuid.uuid4().hex[:8]}" if where else None
    os.environ.pop("GAMELAKE_BRONZE_PATH", None)
    os.environ.pop("GAMELAKE_INGEST_WAREHOUSE_URI", None)
    if lake:
        os.environ["GAMELAKE_INGEST_WAREHOUSE_URI"] = lake
    games = STOCK_GAMES[: args.games]
    windows: list[tuple[dt.datetime, dt.datetime, float]] = []
    compacted: list[int] = []  # tables the upkeep compacted after each counted cycle
    checkpointed: list[int] = []  # tables the upkeep checkpointed after each counted cycle
    log_entries: list[tuple[int, int]] = []  # after each counted cycle: all tables', the largest's
    policy = UpkeepPolicy(log_hours=args.log_minutes / 60)
    try:
        project = root / "project"
        project.mkdir()
        _copy_project(project, games)
        spark = local_session(root / "warehouse", lake)
        bronze = str(spark.conf.get("spark.gamelake.bronze.path"))
        schema = _bronze_rows(spark, 0, 1, games, 1).schema.toDDL()
        spark.sql(
            f"create table delta.`{bronze}` ({schema}) using delta partitioned by (event_date) "
            "tblproperties (delta.enableChangeDataFeed = true)"
        )
        _land(spark, bronze, _bronze_rows(spark, 0, args.history, games, 30))
        runner = WarmDbt(project, project / "profiles")
        for step in ("seed", "build"):
            if not runner.invoke(step).success:
                raise SystemExit(f"dbt {step} failed on {storage}")
        tables = TableLocation.of(str(spark.conf.get("spark.sql.warehouse.dir")))
        watch = BronzeWatch(TableLocation.of(bronze), ReaderMarks(tables.child("silver.db")))
        next_id = args.history
        for cycle in range(args.cycles + 1):  # the first warms the session and is not counted
            _land(spark, bronze, _bronze_rows(spark, next_id, args.new, games, 0.01))
            next_id += args.new
            time.sleep(1.5)  # the landing's last requests stay out of the window
            start = dt.datetime.now(dt.UTC)
            took, _, upkeep = _cycle(
                runner,
                spark,
                None,
                "refresh",
                watch,
                args.new,
                gold_threads=args.gold_threads,
                upkeep_policy=policy,
            )
            if cycle:
                windows.append((start, dt.datetime.now(dt.UTC), took))
                compacted.append(len(upkeep.compacted) if upkeep else 0)
                checkpointed.append(len(upkeep.checkpointed) if upkeep else 0)
                log_entries.append(_log_entries(tables))
            print(f"{storage}, cycle {cycle}: {took:.1f} s", file=sys.stderr, flush=True)
        spark.stop()
        time.sleep(1.5)
        logged = _logged(server.log_file, windows[0][0].year) if server else []
    finally:
        if server:
            process.stop(server)
    per_cycle: Counter[str] = Counter()
    for start, end, _ in windows:
        per_cycle.update(kind for at, kind in logged if start <= at <= end)
    return {
        "cycle_s": [round(took, 1) for _, _, took in windows],
        "compacted": compacted,
        "checkpointed": checkpointed,
        "log_entries": log_entries,
        "requests": {kind: round(n / len(windows), 1) for kind, n in sorted(per_cycle.items())},
    }


def _log_entries(tables: TableLocation) -> tuple[int, int]:
    """Entries in the ``_delta_log`` folders of silver, gold and the slice, all and the largest's,
    as a listing of each finds them (on the local disk; none counted on S3)."""
    if not tables.is_local:
        return 0, 0
    logs = [
        path
        for schema in ("silver.db", "gold.db", "bronze.db")
        for path in tables.local_path.glob(f"{schema}/*/_delta_log")
    ]
    counts = [sum(1 for _ in os.scandir(log)) for log in logs]
    return sum(counts), max(counts, default=0)


def main() -> int:
    parser = argparse.ArgumentParser(prog="bench.refresh_requests")
    parser.add_argument("--games", type=int, default=5)
    parser.add_argument("--cycles", type=int, default=5)
    parser.add_argument("--new", type=int, default=6000, help="events landed before each cycle, all games")
    parser.add_argument("--history", type=int, default=30_000)
    parser.add_argument(
        "--gold-threads", type=int, default=DEFAULT_GOLD_THREADS, help="as `ingest refresh`'s"
    )
    parser.add_argument(
        "--log-minutes",
        type=float,
        default=DEFAULT_LOG_HOURS * 60,
        help="of Delta log the upkeep keeps (as `ingest refresh --log-hours`, compressed)",
    )
    parser.add_argument("--side", choices=["s3", "local disk"], help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.side:  # one side, in a process (and Spark JVM) of its own
        print(json.dumps(_side(args.side, args)))
        return 0
    sides = {}
    settings = [f"--{name.replace('_', '-')}={value}" for name, value in vars(args).items() if name != "side"]
    for storage in ("local disk", "s3"):
        done = subprocess.run(
            [sys.executable, "-m", "bench.refresh_requests", *settings, "--side", storage],
            stdout=subprocess.PIPE,
            text=True,
            check=True,
        )
        sides[storage] = json.loads(done.stdout.strip().splitlines()[-1])
    return _report(args, sides)


def _report(args: argparse.Namespace, sides: dict[str, dict]) -> int:
    local, s3 = (statistics.median(sides[side]["cycle_s"]) for side in ("local disk", "s3"))
    requests = sides["s3"]["requests"]
    total = sum(requests.values())
    by_family: Counter[str] = Counter()
    for kind, n in requests.items():
        by_family[kind.split(" ")[0] if not kind.startswith("build lock") else "build lock"] += n
    body = [
        f"- settings: {vars(args)}; S3: bronze and dbt's tables on S3Proxy (loopback, filesystem "
        "backend, request log on), the Derby metastore on the local disk",
        f"- cycle s, local disk: {sides['local disk']['cycle_s']}, median {local:.1f}",
        f"- cycle s, S3: {sides['s3']['cycle_s']}, median {s3:.1f}",
        f"- refresh cycle, S3 against local disk: {s3 / local:.2f}x",
        f"- S3 requests per cycle: {total:.0f}; by table family: "
        + ", ".join(f"{name} {n:.0f}" for name, n in by_family.most_common()),
        f"- S3 requests per cycle, by kind: {requests}",
        f"- back to back, a minute of cycles on S3: about {total * 60 / s3:.0f} requests",
    ]
    print("\n".join(body))
    append_section(RESULTS, "The continuous refresh on S3 against a local disk: cycles and requests", body)
    return 0


if __name__ == "__main__":
    sys.exit(main())
