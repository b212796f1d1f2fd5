"""The S3 requests of each step of one upkeep of a bronze-shaped table, counted on the server.

    python -m bench.upkeep_requests [--commits 50] [--dates 7]

A private S3Proxy with its request log on holds a table with a checkpoint, then ``--commits``
appends of one small file per date. The steps of ``table_upkeep.upkeep`` then run one by one, a
pause between them, and the server's log is cut at the pauses: requests by step, kind of object
and method. It names which delta-rs call reads the log how often (the 16:37 run of
``bench.object_storage`` found each commit read about five times during the upkeep). Those steps
are the upkeep as it ran before stop 52, each opening the table anew; a second table made the
same way then takes ``table_upkeep.upkeep`` as it runs now, one handle brought forward between
the steps, counted whole. Results: bench/results/object_storage.md.
"""

from __future__ import annotations

import argparse
import datetime as dt
import sys
import tempfile
import time
import uuid
from collections import Counter
from collections.abc import Callable
from pathlib import Path

import pyarrow as pa
from deltalake import DeltaTable, write_deltalake
from gamelake_dev.localstack import process

from bench.object_storage import _REQUEST, RESULTS, _start_s3
from bench.results_file import append_section
from ingest.landing.delta.table_location import TableLocation
from ingest.landing.delta.table_properties import with_fixed_properties
from ingest.landing.upkeep.compaction import compact
from ingest.landing.upkeep.table_upkeep import Retention, upkeep

_PAUSE_S = 1.5


def _request_times(log: Path, prefix: str) -> list[tuple[dt.datetime, str]]:
    """(time, "kind METHOD") of each logged request under ``prefix``."""
    year = dt.datetime.now(dt.UTC).year
    out = []
    for line in log.read_text(errors="replace").splitlines():
        match = _REQUEST.search(line)
        if match and prefix in match[3]:
            at = dt.datetime.strptime(f"{year}-{match[1]}", "%Y-%m-%d %H:%M:%S.%f").replace(tzinfo=dt.UTC)
            out.append((at, f"{_kind(match[3])} {match[2]}"))
    return out


def _kind(key: str) -> str:
    if "_delta_log" not in key:
        return "data" if ".parquet" in key else "listing"
    name = key.rsplit("/", 1)[-1].split("?")[0]
    for kind in ("checkpoint.parquet", ".json", "_last_checkpoint", "lock"):
        if kind in name:
            return {"checkpoint.parquet": "checkpoint", ".json": "commit"}.get(kind, kind)
    return "log listing"


def _table(uri: str, options: dict[str, str], commits: int, dates: int) -> None:
    rows = pa.table({"n": pa.array([0], pa.int64()), "event_date": pa.array([dt.date(2026, 1, 1)])})
    write_deltalake(uri, rows, partition_by=["event_date"], storage_options=options)
    DeltaTable(uri, storage_options=options).create_checkpoint()
    for i in range(commits):
        day = [dt.date(2026, 1, 1 + d) for d in range(dates)]
        batch = pa.table({"n": pa.array([i] * dates, pa.int64()), "event_date": pa.array(day)})
        write_deltalake(uri, batch, mode="append", partition_by=["event_date"], storage_options=options)


def _steps(location: TableLocation, retention: Retention) -> list[tuple[str, Callable[[], object]]]:
    """``table_upkeep.upkeep``'s calls before stop 52, one at a time, each open as it was."""
    held: dict[str, DeltaTable] = {}

    def reopen() -> None:
        held["table"] = location.delta_table()

    return [
        ("open the table (for the first checkpoint)", reopen),
        ("create_checkpoint", lambda: held["table"].create_checkpoint()),
        ("compact (opens the table, one optimize per date)", lambda: compact(location)),
        ("open the table again (for vacuum)", reopen),
        ("with_fixed_properties", lambda: with_fixed_properties(held["table"], retention.properties())),
        (
            "vacuum",
            lambda: held["table"].vacuum(
                retention_hours=168, dry_run=False, enforce_retention_duration=False, full=True
            ),
        ),
        ("update_incremental", lambda: held["table"].update_incremental()),
        ("create_checkpoint (second)", lambda: held["table"].create_checkpoint()),
        ("cleanup_metadata", lambda: held["table"].cleanup_metadata()),
    ]


def _vacuum(table: DeltaTable, retention: Retention) -> object:
    return table.vacuum(
        retention_hours=retention.vacuum_hours, dry_run=False, enforce_retention_duration=False, full=True
    )


def main() -> int:
    parser = argparse.ArgumentParser(prog="bench.upkeep_requests")
    parser.add_argument("--commits", type=int, default=50)
    parser.add_argument("--dates", type=int, default=7)
    args = parser.parse_args()
    server, where = _start_s3(Path(tempfile.mkdtemp(prefix="gamelake-bench-upkeep-")))
    prefix = f"upkeep-{uuid.uuid4().hex[:8]}"
    uri = f"s3://{where.bucket}/{prefix}/game_events"
    location = TableLocation.of(uri)
    now_prefix = f"upkeep-now-{uuid.uuid4().hex[:8]}"  # not starting with ``prefix``: counted apart
    now = TableLocation.of(f"s3://{where.bucket}/{now_prefix}/game_events")
    try:
        _table(uri, location.storage_options, args.commits, args.dates)
        _table(now.uri, now.storage_options, args.commits, args.dates)
        windows = []
        for name, step in _steps(location, Retention(48, 168)):
            time.sleep(_PAUSE_S)
            start = dt.datetime.now(dt.UTC)
            step()
            windows.append((name, start, dt.datetime.now(dt.UTC)))
        time.sleep(_PAUSE_S)
        start = dt.datetime.now(dt.UTC)
        upkeep(now, Retention(48, 168))
        whole = (start, dt.datetime.now(dt.UTC))
        time.sleep(_PAUSE_S)
        logged = _request_times(server.log_file, prefix)
        logged_now = _request_times(server.log_file, now_prefix)
    finally:
        process.stop(server)
    body = [
        f"- settings: {vars(args)}; one checkpoint, then the appends; S3Proxy on loopback, request log on"
    ]
    total: Counter[str] = Counter()
    for name, start, end in windows:
        counts = Counter(kind for at, kind in logged if start <= at <= end)
        total.update(counts)
        shown = ", ".join(f"{kind} {n}" for kind, n in sorted(counts.items()))
        body.append(f"- {name}: {sum(counts.values())} requests ({shown})")
    commit_gets = total.get("commit GET", 0)
    body.append(
        f"- the whole upkeep: {sum(total.values())} requests, {commit_gets} GETs of commit files "
        f"({commit_gets / args.commits:.1f} per commit after the checkpoint)"
    )
    counts = Counter(kind for at, kind in logged_now if whole[0] <= at <= whole[1])
    shown = ", ".join(f"{kind} {n}" for kind, n in sorted(counts.items()))
    now_gets = counts.get("commit GET", 0)
    body.append(
        f"- `table_upkeep.upkeep` as it runs now, one handle, on a table made the same way: "
        f"{sum(counts.values())} requests, {now_gets} GETs of commit files "
        f"({now_gets / args.commits:.1f} per commit after the checkpoint; {shown})"
    )
    print("\n".join(body))
    append_section(RESULTS, "The upkeep's requests on S3, step by step", body)
    return 0


if __name__ == "__main__":
    sys.exit(main())
