"""What the refresh saves by leaving ``assert_gold_rows_valid`` to ``dbt build`` and ``dbt test``:
warm refresh cycles with and without it, in turn, in one Spark session.

    python -m bench.gold_check_pairs [--games 5] [--pairs 4] [--new 6000]

On bench.refresh_profile's private lakehouse (the repo's dbt project as it is now, 60,000 events
of history), one warm-up cycle runs, then ``--pairs`` pairs of blocks: the refresh's own cycles
(``refresh_selection.after_slice_args``, without the check) and the same with the check back in
their second invocation. A block is two cycles of one side and only its second is timed: a cycle
leaves Delta snapshots read or unread for the next one (the check reads every gold table's new
snapshot, which the next cycle's mark read then finds cached), so a timed cycle follows one of
its own side. The order inside a pair alternates. Before every cycle ``--new`` events land in
bronze for all the games, so both sides build the same amount. Both sides run the same models,
gold's key guard included; only the check differs. Each pair's two timed cycles and their ratio
are printed and appended, with the machine and date, to bench/results/gold_check_pairs.md.
"""

from __future__ import annotations

import argparse
import json
import statistics
from collections.abc import Callable

from bench.incremental import _bronze_rows, _land
from bench.refresh_profile import _cycle, open_lakehouse
from bench.results_file import append_section
from ingest.core.settings.paths import PROJECT_DIR
from ingest.ops.bronze_marks import ReaderMarks
from ingest.ops.bronze_watch import BronzeWatch
from ingest.ops.codegen_mode import set_mode
from ingest.ops.refresh_command import CycleSize
from ingest.ops.refresh_selection import GOLD_CHECK, after_slice_args
from ingest.ops.warm_dbt import WarmDbt

RESULTS = PROJECT_DIR / "bench" / "results" / "gold_check_pairs.md"


def with_gold_check(selection: list[str]) -> list[str]:
    """The refresh's second invocation with ``assert_gold_rows_valid`` back in it."""
    args = after_slice_args(selection)
    if GOLD_CHECK not in args:
        raise SystemExit(f"the refresh already runs {GOLD_CHECK}: nothing to compare")
    return [a for a in args if a != GOLD_CHECK]


SIDES = {"without the check (the refresh)": after_slice_args, "with the check": with_gold_check}


def measure(games: int, pairs: int, new: int) -> list[dict[str, float]]:
    root, state, spark = open_lakehouse(games)
    project = root / "project"
    bronze = root / "warehouse" / "bronze" / "game_events"
    set_mode(spark, CycleSize(pending_rows=new).runs_interpreted())
    watch = BronzeWatch(bronze, ReaderMarks(root / "warehouse" / "spark" / "silver.db"))
    runner = WarmDbt(project, project / "profiles", parses=0)

    def cycle(second: Callable[[list[str]], list[str]]) -> float:
        _land(spark, bronze, _bronze_rows(spark, state["next_id"], new, state["games"], 0.01))
        state["next_id"] += new
        took, results = _cycle(runner, spark, None, "refresh", watch, new, second)
        failed = [r.node.name for r in results if r.status not in ("success", "pass")]
        if failed:
            raise SystemExit(f"the cycle failed: {failed}")
        return took

    try:
        cycle(after_slice_args)  # warm-up
        measured = []
        for pair in range(pairs):
            order = list(SIDES) if pair % 2 == 0 else list(reversed(SIDES))
            times = {}
            for side in order:
                cycle(SIDES[side])  # the block's first: it follows the other side
                times[side] = cycle(SIDES[side])
            shown = ", ".join(f"{side} {times[side]:.1f} s" for side in SIDES)
            print(f"pair {pair + 1}: {shown}", flush=True)
            measured.append(times)
    finally:
        (root / "state.json").write_text(json.dumps(state))
        spark.stop()
    return measured


def report(games: int, new: int, measured: list[dict[str, float]]) -> list[str]:
    without, with_ = list(SIDES)
    lines = [
        f"{games} games, {new:,} new events for all of them before each cycle; blocks of two warm "
        "cycles of one side in turn, each block's second timed",
        "",
        f"| pair | {without} s | {with_} s | ratio |",
        "|---:|---:|---:|---:|",
    ]
    ratios = [t[without] / t[with_] for t in measured]
    for i, (times, ratio) in enumerate(zip(measured, ratios, strict=True), start=1):
        lines.append(f"| {i} | {times[without]:.1f} | {times[with_]:.1f} | {ratio:.2f} |")
    lines += [
        "",
        f"- median: {statistics.median(t[without] for t in measured):.1f} s without the check, "
        f"{statistics.median(t[with_] for t in measured):.1f} s with it; "
        f"median ratio {statistics.median(ratios):.2f}",
        f"- median saving per cycle: {statistics.median(t[with_] - t[without] for t in measured):.1f} s",
    ]
    return lines


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--games", type=int, default=5)
    parser.add_argument("--pairs", type=int, default=4)
    parser.add_argument("--new", type=int, default=6000)
    args = parser.parse_args(argv)
    lines = report(args.games, args.new, measure(args.games, args.pairs, args.new))
    append_section(
        RESULTS,
        "Warm refresh cycles without and with assert_gold_rows_valid, in turn",
        lines,
        heading="# The gold check in the refresh, paired (bench/gold_check_pairs.py)\n",
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
