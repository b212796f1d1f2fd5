"""Landing files by codec: bytes and CPU per row of the files one batch writes, snappy against zstd.

    python -m bench.landing_codec BRONZE_DIR [--files 40] [--repeats 3]

The files landing wrote are the folder's largest cost at steady state: about four times the
bytes of the compacted data they become, each kept for ``vacuum_retention_hours`` after
compaction replaced it (doc/OPERATING.md, disk table). This reads the ``--files`` newest landing files
(under 2 MB: one batch and one event date each) of a bronze table, for example a soak's, and
writes each again in memory as ``write_part`` does (one row group), once per codec; the fastest
of ``--repeats`` counts (CPU seconds of this process). Results are printed and appended, with
machine and date, to bench/results/landing_codec.md.
"""

from __future__ import annotations

import argparse
import io
import time
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq

from bench.results_file import append_section
from ingest.core.settings.paths import PROJECT_DIR

RESULTS = PROJECT_DIR / "bench" / "results" / "landing_codec.md"
CODECS = (("snappy", None), ("zstd", 1), ("zstd", 3))
LANDING_MAX_BYTES = 2_000_000


def landing_files(bronze: Path, count: int) -> list[pa.Table]:
    files = [p for p in bronze.glob("event_date=*/*.parquet") if p.stat().st_size < LANDING_MAX_BYTES]
    if not files:
        raise SystemExit(f"no landing files (parquet under 2 MB) in {bronze}: point at a bronze table")
    newest = sorted(files, key=lambda p: p.stat().st_mtime)[-count:]
    return [pq.read_table(p) for p in newest]


def measure(tables: list[pa.Table], codec: str, level: int | None, repeats: int) -> tuple[int, float]:
    """(bytes written, fastest CPU seconds) for every table written with ``codec``."""
    best, size = float("inf"), 0
    for _ in range(repeats):
        size, started = 0, time.process_time()
        for table in tables:
            out = io.BytesIO()
            pq.write_table(table, out, compression=codec, compression_level=level, row_group_size=1 << 20)
            size += out.tell()
        best = min(best, time.process_time() - started)
    return size, best


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("bronze", type=Path)
    parser.add_argument("--files", type=int, default=40)
    parser.add_argument("--repeats", type=int, default=3)
    args = parser.parse_args()
    tables = landing_files(args.bronze, args.files)
    rows = sum(t.num_rows for t in tables)
    lines = [
        f"- input: the {len(tables)} newest landing files of {args.bronze.name}, {rows:,} rows; best of "
        f"{args.repeats}",
        "",
        "| codec | bytes/row | CPU µs/row |",
        "|---|---:|---:|",
    ]
    for codec, level in CODECS:
        size, cpu_s = measure(tables, codec, level, args.repeats)
        name = codec if level is None else f"{codec} level {level}"
        lines.append(f"| {name} | {size / rows:.1f} | {cpu_s / rows * 1e6:.3f} |")
    heading = "# Landing files by codec\n\nWritten by `python -m bench.landing_codec`.\n"
    append_section(RESULTS, "Landing files by codec", lines, heading)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
