"""Resident memory of what a writer keeps of bronze, against the tombstones in its checkpoint.

    python -m bench.writer_memory [--tombstones 0 20000 100000] [--commits 200]

The soak of 2026-11-25 13:05 saw the service grow by some 40 MB over its first hour and then
stay flat: the writer held a delta-rs handle, whose state lists every live file and every
tombstone of the table, and tombstones stay in the checkpoint for ``TOMBSTONE_HOURS``. For each
count this builds a table whose checkpoint holds that many (``bench.commit_tombstones``), then
runs each in a fresh interpreter:

- ``handle``: what the writer held before, a delta-rs handle refreshed before each of
  ``--commits`` empty appends that carry an app transaction;
- ``writer``: the bronze writer now (``LogState``): a batch's ``columns`` then ``commit``, as
  the service calls them, ``--commits`` times.

Each child reports its resident memory after its commits and its peak, less what the
interpreter held after its imports. The growth law is the ratio between the largest and the
smallest count. Results are appended, with machine and date, to bench/results/writer_memory.md.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
from pathlib import Path

from bench.commit_tombstones import table_with_tombstones
from bench.results_file import append_section
from ingest.core.settings.paths import PROJECT_DIR

RESULTS = PROJECT_DIR / "bench" / "results" / "writer_memory.md"
HEADING = "# What a writer of bronze keeps in memory, against the table's tombstones\n"
KINDS = ("handle", "writer")


def _status_mb(field: str) -> float:
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith(field + ":"):
            return int(line.split()[1]) / 1024
    raise RuntimeError(f"/proc/self/status has no {field}")


def _commits_by_handle(path: Path, commits: int) -> None:
    from deltalake import CommitProperties, DeltaTable, PostCommitHookProperties, Transaction

    table = DeltaTable(str(path))
    for i in range(commits):
        table.update_incremental()
        table.create_write_transaction(
            [],
            "append",
            table.schema(),
            partition_by=table.metadata().partition_columns,
            commit_properties=CommitProperties(app_transactions=[Transaction("bench:handle", i)]),
            post_commithook_properties=PostCommitHookProperties(
                create_checkpoint=False, cleanup_expired_logs=False
            ),
        )


def _commits_by_writer(path: Path, commits: int) -> None:
    from ingest.landing.delta.bronze_writer import BronzeWriter
    from ingest.landing.delta.fences import Landing
    from ingest.landing.records import TopicPartition

    writer = BronzeWriter(path, "bench")
    tp = TopicPartition("bench", 0)
    last = writer.landed(tp)
    for _ in range(commits):
        new = 0 if last is None else last + 1
        writer.columns()
        writer.commit([], {tp: Landing(last, new)}, {})
        last = new


def child(kind: str, path: Path, commits: int) -> None:
    """Runs in a fresh interpreter: prints the memory the commits added, as JSON."""
    import deltalake  # noqa: F401  (imports first, so the baseline holds them)
    import pyarrow  # noqa: F401

    import ingest.landing.delta.bronze_writer  # noqa: F401

    base = _status_mb("VmRSS")
    (_commits_by_handle if kind == "handle" else _commits_by_writer)(path, commits)
    print(json.dumps({"rss_mb": _status_mb("VmRSS") - base, "peak_mb": _status_mb("VmHWM") - base}))


def _measure(kind: str, path: Path, commits: int) -> dict[str, float]:
    command = [
        sys.executable,
        "-m",
        "bench.writer_memory",
        "--child",
        kind,
        str(path),
        "--commits",
        str(commits),
    ]
    done = subprocess.run(command, cwd=PROJECT_DIR, capture_output=True, text=True, check=True)
    return json.loads(done.stdout.strip().splitlines()[-1])


def _prepared(path: Path, tombstones: int) -> None:
    """A table with that many tombstones, made a bronze once (its columns and properties set),
    so that the measured writer opens it as a restarted service does, with no change to make."""
    from ingest.landing.delta.bronze_writer import BronzeWriter

    table_with_tombstones(path, tombstones).create_checkpoint()
    BronzeWriter(path, "bench")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tombstones", type=int, nargs="+", default=[0, 20_000, 100_000])
    parser.add_argument("--commits", type=int, default=200)
    parser.add_argument("--child", nargs=2, metavar=("KIND", "PATH"), help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        child(args.child[0], Path(args.child[1]), args.commits)
        return 0
    rows, figures = [], {}
    for count in args.tombstones:
        with tempfile.TemporaryDirectory(prefix="gamelake-writer-memory-") as folder:
            _prepared(Path(folder), count)
            for kind in KINDS:
                figures[kind, count] = _measure(kind, Path(folder), args.commits)
        cells = [f"{figures[k, count][f]:.1f}" for k in KINDS for f in ("rss_mb", "peak_mb")]
        rows.append(f"| {count:,} | " + " | ".join(cells) + " |")
        print(rows[-1], flush=True)
    low, high = min(args.tombstones), max(args.tombstones)
    ratios = {
        kind: (figures[kind, high]["rss_mb"] + 1) / (figures[kind, low]["rss_mb"] + 1) for kind in KINDS
    }
    append_section(
        RESULTS,
        "Writer memory against tombstones",
        [
            f"- `python -m bench.writer_memory --tombstones {' '.join(map(str, args.tombstones))} "
            f"--commits {args.commits}`: MB added to a fresh interpreter after its imports, after "
            f"{args.commits} commits (resident, and peak); 500 live files in every table",
            "",
            "| tombstones in the checkpoint | delta-rs handle: resident MB | peak MB "
            "| bronze writer (LogState): resident MB | peak MB |",
            "|---:|---:|---:|---:|---:|",
            *rows,
            "",
            f"Growth from {low:,} to {high:,} tombstones, (resident + 1 MB) / (resident + 1 MB): "
            + ", ".join(f"{kind} {ratio:.2f}x" for kind, ratio in ratios.items()),
        ],
        heading=HEADING,
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
