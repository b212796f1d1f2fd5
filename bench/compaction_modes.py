"""What the refresh's compaction of a day partition costs, by threshold and codegen mode.

    python -m bench.compaction_modes [--table PATH] [--day YYYY-MM-DD] [--small 30]

On a copy of a silver table (by default the 5-game profile lakehouse's silver_dungeon_depths,
whose day partition bench.refresh_profile has filled to one file of about 27 MB), ``--small``
inserts of 1,200 of the day's rows add the small files a cycle adds, then each variant runs
Spark's OPTIMIZE of that day on a fresh copy of the result: with the small-file threshold at
half of the 64 MB target (as before stop 58), which packs the big file again with the small
ones, or at 4 MB, which leaves it alone; each interpreted (as a small refresh cycle runs its
statements, ingest/ops/codegen_mode.py) and compiled. Times are printed and appended to
bench/results/upkeep_cost.md.
"""

from __future__ import annotations

import argparse
import shutil
import tempfile
import time
from pathlib import Path
from typing import Any

from bench.results_file import append_section
from ingest.core.settings.paths import PROJECT_DIR
from ingest.ops.codegen_mode import set_mode

RESULTS = PROJECT_DIR / "bench" / "results" / "upkeep_cost.md"
PROFILE_SILVER = PROJECT_DIR / ".cache/bench-profile/games-5/warehouse/spark/silver.db/silver_dungeon_depths"
MB = 1024 * 1024
VARIANTS = (("32 MB threshold", 32 * MB), ("4 MB threshold", 4 * MB))


def _add_small_files(spark: Any, table: Path, day: str, count: int) -> None:
    name = f"delta.`{table}`"
    for _ in range(count):
        spark.sql(f"insert into {name} select * from {name} where event_date = date '{day}' limit 1200")


def _optimize(spark: Any, table: Path, day: str, small_bytes: int, interpreted: bool) -> tuple[float, int]:
    set_mode(spark, interpreted)
    spark.conf.set("spark.databricks.delta.optimize.maxFileSize", str(64 * MB))
    spark.conf.set("spark.databricks.delta.optimize.minFileSize", str(small_bytes))
    started = time.perf_counter()
    metrics = spark.sql(f"optimize delta.`{table}` where event_date = date '{day}'").first()["metrics"]
    return time.perf_counter() - started, int(metrics["numFilesRemoved"])


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--table", type=Path, default=PROFILE_SILVER)
    parser.add_argument("--day", help="the partition to fill and compact (default: the table's newest)")
    parser.add_argument("--small", type=int, default=30)
    args = parser.parse_args(argv)
    if not (args.table / "_delta_log").is_dir():
        parser.error(
            f"--table {args.table}: no Delta table there (run bench.refresh_profile --games 5 first)"
        )
    day = args.day or sorted(p.name.removeprefix("event_date=") for p in args.table.glob("event_date=*"))[-1]
    from ingest.core.spark.session import local_session

    rows = []
    with tempfile.TemporaryDirectory(prefix="compaction-", dir=PROJECT_DIR / ".cache") as scratch:
        base = Path(scratch) / "base"
        shutil.copytree(args.table, base)
        spark = local_session(Path(scratch) / "warehouse")
        spark.sparkContext.setLogLevel("ERROR")
        set_mode(spark, True)
        _add_small_files(spark, base, day, args.small)
        for label, small_bytes in VARIANTS:
            for interpreted in (True, False):
                copy = Path(scratch) / f"{small_bytes}-{interpreted}"
                shutil.copytree(base, copy)
                seconds, packed = _optimize(spark, copy, day, small_bytes, interpreted)
                mode = "interpreted" if interpreted else "compiled"
                rows.append(f"| {label} | {mode} | {packed} | {seconds:.2f} |")
                print(rows[-1], flush=True)
        spark.stop()
    body = [
        f"- a copy of `{args.table.name}`, day {day}, {args.small} small files added (1,200 rows each)",
        "",
        "| small-file threshold | mode | files packed | OPTIMIZE s |",
        "|---|---|---:|---:|",
        *rows,
    ]
    append_section(RESULTS, "Compacting a day partition, by threshold and codegen mode", body)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
