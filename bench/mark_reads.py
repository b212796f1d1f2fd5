"""The S3 requests of the refresh's once-a-cycle read of bronze's readers' marks.

    python -m bench.mark_reads [--tables 6] [--cycles 10] [--history 30]

A private S3Proxy with its request log on holds ``--tables`` silver-like Delta tables, each with
``--history`` commits that carry a reader's mark, as silver's inserts do. Each cycle commits once
to every table, as a refresh cycle's silver step does, then reads every mark twice, each way in a
``ReaderMarks`` kept open as the refresh keeps it: reading each moved table's newest
``HISTORY_DEPTH`` commits (as before stop 52), and reading only the commits made since the last
read. ``--idle`` tables get no commit, as the silver tables of games without events. Requests are
counted from the server's log over each read, by log or data and method.
Only delta-rs runs here: no Spark. Results: bench/results/object_storage.md.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path
from typing import Any

import pyarrow as pa
from deltalake import CommitProperties, DeltaTable, write_deltalake
from gamelake_dev.localstack import process

from bench.object_storage import _REQUEST, RESULTS, _start_s3
from bench.results_file import append_section
from ingest.landing.delta.table_location import TableLocation
from ingest.ops.bronze_marks import MARK, MARKED_AT, BronzeMark, ReaderMarks, bronze_mark

AT = "2026-11-28 22:00:00"


def _commit(place: TableLocation, reader: str, version: int) -> None:
    rows = pa.table({"event_id": [f"e{version}"], "bronze_version": [version]})
    metadata = json.dumps({"gamelake.reader": reader, MARK: version, MARKED_AT: AT})
    write_deltalake(
        place.uri,
        rows,
        mode="append",
        storage_options=place.storage_options,
        commit_properties=CommitProperties(custom_metadata={"userMetadata": metadata}),
    )


def _logged_since(log: Path, lines_before: int) -> Counter[str]:
    time.sleep(0.3)  # the server writes its log line after it answers
    counts: Counter[str] = Counter()
    for line in log.read_text(errors="replace").splitlines()[lines_before:]:
        match = _REQUEST.search(line)
        if match:
            kind = "listing" if "list-type" in match[3] else ("log" if "_delta_log" in match[3] else "data")
            counts[f"{kind} {match[2]}"] += 1
    return counts


def _line_count(log: Path) -> int:
    time.sleep(0.3)
    return len(log.read_text(errors="replace").splitlines())


class _WholeWindow(ReaderMarks):
    """The read before stop 52: a moved table's newest HISTORY_DEPTH commits, every time."""

    def _moved_mark(
        self, seen: Any, place: TableLocation, table: DeltaTable, reader: str
    ) -> BronzeMark | None:
        return bronze_mark(table, reader)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--tables", type=int, default=6)
    parser.add_argument("--cycles", type=int, default=10)
    parser.add_argument("--history", type=int, default=30)
    parser.add_argument("--idle", type=int, default=6, help="tables that get no commit: games without events")
    args = parser.parse_args(argv)
    server, where = _start_s3(Path(tempfile.mkdtemp(prefix="mark-reads-")))
    try:
        silver = TableLocation.of(f"s3://{where.bucket}/bench/spark-warehouse/silver.db")
        names = [f"silver_game_{n}" for n in range(args.tables)]
        idle = [f"silver_idle_{n}" for n in range(args.idle)]
        for name in names + idle:
            for version in range(args.history):
                _commit(silver.child(name), f"silver.{name}", version)
        ways = {"newest 20 commits": _WholeWindow(silver), "commits since the last read": ReaderMarks(silver)}
        for way in ways.values():
            way.read()
        per_way: dict[str, list[Counter[str]]] = {label: [] for label in ways}
        for cycle in range(args.cycles):
            for name in names:
                _commit(silver.child(name), f"silver.{name}", args.history + cycle)
            found = []
            for label, way in ways.items():
                before = _line_count(server.log_file)
                found.append(way.read())
                per_way[label].append(_logged_since(server.log_file, before))
            assert found[0] == found[1], found  # both ways find the same marks
            counted = ", ".join(f"{label} {sum(c[-1].values())}" for label, c in per_way.items())
            print(f"cycle {cycle + 1}: {counted}")
    finally:
        process.stop(server)
    body = [
        f"- settings: {vars(args)}; between reads one commit to each of --tables, none to --idle;"
        f" delta-rs {_deltalake_version()}",
        "",
        "| read | requests a cycle (median) | per table | by kind, median cycle |",
        "|---|---:|---:|---|",
    ]
    for label, cycles in per_way.items():
        totals = [sum(c.values()) for c in cycles]
        median = statistics.median(totals)
        kinds = cycles[totals.index(sorted(totals)[len(totals) // 2])]
        per_table = median / (args.tables + args.idle)
        body.append(f"| {label} | {median:g} | {per_table:.1f} | {dict(sorted(kinds.items()))} |")
    append_section(RESULTS, "The refresh's read of the readers' marks on S3", body)
    return 0


def _deltalake_version() -> str:
    from importlib.metadata import version

    return version("deltalake")


if __name__ == "__main__":
    sys.exit(main())
