"""Checkpoint and commit cost against the tombstones a checkpoint carries.

    python -m bench.commit_tombstones [--tombstones 0 20000 100000] [--commits 40]
    python -m bench.commit_tombstones --log-replay BRONZE_DIR [--commits 40]
    python -m bench.commit_tombstones --log-files 0 10000 50000 125000 [--commits 40]

A checkpoint keeps the remove action (tombstone) of every file replaced within the table's
``delta.deletedFileRetentionDuration``. At 10,000 events/s the upkeep replaces about 15,000 files
an hour, so with the 168-hour vacuum retention as that duration the checkpoint would grow for a
week. For each ``--tombstones`` count this builds a partitioned table whose checkpoint holds that
many (appends of ``FILES_PER_ROUND`` files, each compacted away), then measures what the
upkeep's checkpoint costs (time and size) and what ``--commits`` commits of the service's kind
cost (``update_incremental``, then an empty append carrying an app transaction, no retries),
once with the tombstones in the checkpoint and once after a checkpoint that dropped them (what
``TOMBSTONE_HOURS`` does an hour after each compaction). Medians are printed and appended, with
machine and date, to bench/results/commit_cost.md.

``--log-replay`` measures the other suspect on a real table (a soak's bronze): a copy of its
``_delta_log`` gets the same commits as it is, with the commits since its newest checkpoint to
replay, and again right after a new checkpoint that keeps every tombstone.

``--log-files`` measures the third: every refresh and commit lists ``_delta_log``, and on a
local disk that listing reads every entry (object storage lists from an offset). For each count
a fresh table's log gets that many extra entries (stand-ins for the commits that
``log_retention_hours`` keeps: at 10,000 events/s about 2,600 an hour, 125,000 at the default 48
hours) before the commits are timed.
"""

from __future__ import annotations

import argparse
import json
import shutil
import statistics
import tempfile
import time
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
from deltalake import CommitProperties, DeltaTable, PostCommitHookProperties, Transaction, write_deltalake

from bench.results_file import append_section
from ingest.core.settings.paths import PROJECT_DIR
from ingest.landing.delta.bronze_writer import BronzeWriter
from ingest.landing.delta.fences import Landing
from ingest.landing.delta.local_delta_log import LocalDeltaLog
from ingest.landing.records import TopicPartition

RESULTS = PROJECT_DIR / "bench" / "results" / "commit_cost.md"
FILES_PER_ROUND = 500


def table_with_tombstones(path: Path, tombstones: int) -> DeltaTable:
    """A table of ``FILES_PER_ROUND`` live files whose newest checkpoint holds ``tombstones``."""
    days = pa.array([f"d{i:03d}" for i in range(FILES_PER_ROUND)])
    # Each round after the first replaces two files per partition (the new one, the last merge).
    for round_ in range(max(tombstones // (2 * FILES_PER_ROUND), 0) + 1):
        batch = pa.table({"day": days, "n": pa.array([round_] * FILES_PER_ROUND, pa.int64())})
        write_deltalake(str(path), batch, mode="append", partition_by=["day"])
        if round_:
            DeltaTable(str(path)).optimize.compact()
    table = DeltaTable(str(path))
    table.alter.set_table_properties(
        {"delta.deletedFileRetentionDuration": "interval 168 hours"}, raise_if_not_exists=False
    )
    return table


def drop_tombstones(table: DeltaTable) -> None:
    table.alter.set_table_properties(
        {"delta.deletedFileRetentionDuration": "interval 0 hours"}, raise_if_not_exists=False
    )


def checkpoint(table: DeltaTable) -> tuple[float, int]:
    """(ms, bytes) of a new checkpoint of ``table``."""
    table.update_incremental()
    started = time.perf_counter()
    table.create_checkpoint()
    elapsed = (time.perf_counter() - started) * 1000
    newest = sorted(_log(table).glob("*.checkpoint.parquet"))[-1]
    return elapsed, newest.stat().st_size


def _log(table: DeltaTable) -> Path:
    return Path(table.table_uri.removeprefix("file://")) / "_delta_log"


def commit_ms(table: DeltaTable, commits: int, partition: str = "day") -> float:
    """Median ms of a refresh plus one empty append with an app transaction, as the service commits."""
    times = []
    for i in range(commits):
        started = time.perf_counter()
        table.update_incremental()
        table.create_write_transaction(
            [],
            "append",
            table.schema(),
            partition_by=[partition],
            commit_properties=CommitProperties(
                max_commit_retries=0, app_transactions=[Transaction("bench", i)]
            ),
            post_commithook_properties=PostCommitHookProperties(
                create_checkpoint=False, cleanup_expired_logs=False
            ),
        )
        times.append((time.perf_counter() - started) * 1000)
    return statistics.median(times)


def measure(table: DeltaTable, commits: int, partition: str = "day") -> tuple[int, float, int, float]:
    """(tombstones, checkpoint ms, checkpoint bytes, commit ms) of a new checkpoint of ``table``."""
    elapsed, size = checkpoint(table)
    return checkpoint_removes(table), elapsed, size, commit_ms(table, commits, partition)


def checkpoint_removes(table: DeltaTable) -> int:
    newest = sorted(_log(table).glob("*.checkpoint.parquet"))[-1]
    return pq.read_table(newest, columns=["remove"]).column("remove").drop_null().length()


def log_replay(bronze: Path, commits: int) -> list[str]:
    with tempfile.TemporaryDirectory(prefix="gamelake-replay-") as folder:
        shutil.copytree(bronze / "_delta_log", Path(folder) / "_delta_log")
        table = DeltaTable(folder)
        last = json.loads((Path(folder) / "_delta_log" / "_last_checkpoint").read_text())["version"]
        behind = table.version() - last
        as_is = commit_ms(table, commits, "event_date")
        checkpointed = measure(table, commits, "event_date")
    since = f"{behind}-{behind + commits} commits since the newest checkpoint"
    return [
        f"- log replay on a copy of {bronze}'s log at version {behind + last:,} "
        f"({checkpointed[0]:,} tombstones in its checkpoint): {as_is:.1f} ms per commit with {since}, "
        f"{checkpointed[3]:.1f} ms right after a new checkpoint that keeps every tombstone",
    ]


def log_files(counts: list[int], commits: int) -> list[str]:
    rows = []
    for count in counts:
        with tempfile.TemporaryDirectory(prefix="gamelake-log-files-") as folder:
            table = table_with_tombstones(Path(folder) / "raw", 0)
            writer = BronzeWriter(Path(folder) / "bronze", "bench")
            assert isinstance(writer.delta_log, LocalDeltaLog), "a local folder's bronze"
            for log in (_log(table), writer.delta_log.folder):
                for i in range(count):
                    (log / f".expired-commit-{i:07d}.json").touch()
            raw, (median, mean) = commit_ms(table, commits), bronze_commit_ms(writer, commits)
            rows.append(f"| {count:,} | {raw:.1f} | {median:.2f} | {mean:.2f} |")
            print(rows[-1], flush=True)
    return [
        f"- `python -m bench.commit_tombstones --log-files`: median of {commits} commits. delta-rs: a "
        f"refresh plus an empty append with an app transaction ({FILES_PER_ROUND} live files). "
        "Bronze writer: a batch's `columns` plus its `commit` (no files, one app transaction), as the "
        "service commits since blind appends go straight into `_delta_log`",
        "",
        "| extra entries in `_delta_log` | delta-rs ms per commit (median) "
        "| bronze writer ms per batch (median) | bronze writer ms per batch (mean) |",
        "|---:|---:|---:|---:|",
        *rows,
    ]


def bronze_commit_ms(writer: BronzeWriter, commits: int) -> tuple[float, float]:
    """Median and mean ms of what a batch costs the bronze writer around its files: ``columns``,
    then ``commit``."""
    times = []
    tp = TopicPartition("bench", 0)
    for i in range(commits):
        started = time.perf_counter()
        writer.columns()
        writer.commit([], {tp: Landing(i - 1 if i else None, i)}, {})
        times.append((time.perf_counter() - started) * 1000)
    return statistics.median(times), statistics.fmean(times)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tombstones", type=int, nargs="+", default=[0, 20_000, 100_000])
    parser.add_argument("--commits", type=int, default=40)
    parser.add_argument("--log-replay", type=Path, help="a bronze table whose log to measure instead")
    parser.add_argument("--log-files", type=int, nargs="+", help="measure these log folder sizes instead")
    args = parser.parse_args()
    if args.log_files:
        return _record(log_files(args.log_files, args.commits))
    if args.log_replay:
        return _record(log_replay(args.log_replay, args.commits))
    rows = []
    for count in args.tombstones:
        with tempfile.TemporaryDirectory(prefix="gamelake-tombstones-") as folder:
            table = table_with_tombstones(Path(folder), count)
            kept = measure(table, args.commits)
            drop_tombstones(table)
            dropped = measure(table, args.commits)
        cells = [f"{n:,}" if isinstance(n, int) else f"{n:.1f}" for n in (*kept, *dropped)]
        rows.append("| " + " | ".join(cells) + " |")
        print(rows[-1], flush=True)
    return _record(
        [
            f"- `python -m bench.commit_tombstones`: {FILES_PER_ROUND} live files; a commit is the median of "
            f"{args.commits} (refresh + empty append with an app transaction), right after the checkpoint",
            "",
            "| tombstones | checkpoint ms | checkpoint bytes | commit ms "
            "| after dropping: tombstones | checkpoint ms | checkpoint bytes | commit ms |",
            "|---:|---:|---:|---:|---:|---:|---:|---:|",
            *rows,
        ]
    )


def _record(body: list[str]) -> int:
    append_section(RESULTS, "Checkpoint and commit cost", body)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
