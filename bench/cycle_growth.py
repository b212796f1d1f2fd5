"""Does a warm refresh cycle grow as its tables age? Early against late cycles of one run.

    python -m bench.cycle_growth [--games 5] [--cycles 40] [--new 6000] [--history 30000] [--gold-threads 2]
        [--log-minutes 360]

On a fresh private lakehouse on the local disk (``bench.refresh_requests``'s side, in a process
and Spark JVM of its own), ``--cycles`` refresh cycles run back to back as ``ingest refresh
--continuous`` runs them, each after a landing of ``--new`` events of every game, all on today's
date: so today's partitions, the tables' logs and gold's history grow as they do through a day,
with the refresh's upkeep compacting, vacuuming and checkpointing what is due. Both sides of the ratio come
from the same run: the median of the first fifth of the cycles against that of the last fifth.
Each block of ten cycles is listed with its median, its slowest, the compactions and
checkpoints the upkeep made in it, and the entries of the tables' ``_delta_log`` folders after
it, which every statement lists: ``--log-minutes`` below the run's length shows them held at
what the log's retention keeps.
Results: bench/results/refresh_profile.md.
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys

from bench.results_file import append_section
from ingest.core.settings.paths import PROJECT_DIR
from ingest.ops.lakehouse_checkpoints import DEFAULT_LOG_HOURS
from ingest.ops.refresh_command import DEFAULT_GOLD_THREADS

RESULTS = PROJECT_DIR / "bench" / "results" / "refresh_profile.md"
BLOCK = 10


def main() -> int:
    parser = argparse.ArgumentParser(prog="bench.cycle_growth")
    parser.add_argument("--games", type=int, default=5)
    parser.add_argument("--cycles", type=int, default=40)
    parser.add_argument("--new", type=int, default=6000)
    parser.add_argument("--history", type=int, default=30_000)
    parser.add_argument(
        "--gold-threads", type=int, default=DEFAULT_GOLD_THREADS, help="as `ingest refresh`'s"
    )
    parser.add_argument(
        "--log-minutes",
        type=float,
        default=DEFAULT_LOG_HOURS * 60,
        help="of Delta log the upkeep keeps (`ingest refresh --log-hours`, compressed into a short run)",
    )
    args = parser.parse_args()
    settings = [f"--{name.replace('_', '-')}={value}" for name, value in vars(args).items()]
    done = subprocess.run(
        [sys.executable, "-m", "bench.refresh_requests", *settings, "--side", "local disk"],
        stdout=subprocess.PIPE,
        text=True,
        check=True,
    )
    side = json.loads(done.stdout.strip().splitlines()[-1])
    cycles, compacted, checkpointed = side["cycle_s"], side["compacted"], side["checkpointed"]
    entries = side["log_entries"]
    fifth = max(len(cycles) // 5, 1)
    first, last = statistics.median(cycles[:fifth]), statistics.median(cycles[-fifth:])
    body = [
        f"- settings: {vars(args)}; a fresh lakehouse on the local disk, all new events on today's date",
        f"- median cycle, first {fifth} against last {fifth}: {first:.1f} s against {last:.1f} s: "
        f"{last / first:.2f}x",
        f"- slowest cycle against the median of all: {max(cycles):.1f} s against "
        f"{statistics.median(cycles):.1f} s: {max(cycles) / statistics.median(cycles):.2f}x",
        "",
        "| cycles | median s | max s | compactions | checkpoints (upkeep) "
        "| `_delta_log` entries after, all tables (largest) |",
        "|---|---:|---:|---:|---:|---:|",
    ]
    for at in range(0, len(cycles), BLOCK):
        block = cycles[at : at + BLOCK]
        total, largest = entries[min(at + BLOCK, len(entries)) - 1]
        upkept = f"{sum(compacted[at : at + BLOCK])} | {sum(checkpointed[at : at + BLOCK])}"
        body.append(
            f"| {at + 1}-{at + len(block)} | {statistics.median(block):.1f} | {max(block):.1f} "
            f"| {upkept} | {total} ({largest}) |"
        )
    body.append(f"\n- every cycle, s: {cycles}")
    print("\n".join(body))
    append_section(RESULTS, "A warm cycle against its tables' age, one run", body)
    return 0


if __name__ == "__main__":
    sys.exit(main())
