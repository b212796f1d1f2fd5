"""The Spark jobs of one warm refresh cycle, grouped by what started them.

    python -m bench.cycle_jobs [--games 5] [--new 6000] [--warm-cycles 8] [--top 25]

On bench.refresh_profile's private lakehouse, ``--warm-cycles`` refresh cycles run first (the
JIT settles, bench/results/jvm_cpu.md), then one more, after ``--new`` events landed for all
the games, whose Spark jobs are read from the session's REST API: each job's group is Delta's
status description when Delta set one (``Delta: Compute snapshot for version: N`` is grouped
as ``Delta: Compute snapshot for version``), else the call site Spark names the job by. Per
group: jobs, stages, tasks and the jobs' summed durations (jobs of two dbt threads overlap, so
the sum can pass the cycle's wall time), and the time at least one job ran (the union of the
jobs' intervals): the rest of the wall no Spark job ran at all. Printed and appended to
bench/results/cycle_jobs.md with the machine and the date.
"""

from __future__ import annotations

import argparse
import json
import re
import urllib.request
from collections import defaultdict
from datetime import datetime
from typing import Any

from bench.incremental import UI_PORT, _bronze_rows, _land
from bench.refresh_profile import _cycle, open_lakehouse
from bench.results_file import append_section
from ingest.core.settings.paths import PROJECT_DIR
from ingest.ops.bronze_marks import ReaderMarks
from ingest.ops.bronze_watch import BronzeWatch
from ingest.ops.warm_dbt import WarmDbt

RESULTS = PROJECT_DIR / "bench" / "results" / "cycle_jobs.md"
API = f"http://127.0.0.1:{UI_PORT}/api/v1/applications"


def _get(path: str) -> Any:
    with urllib.request.urlopen(f"{API}{path}") as response:
        return json.load(response)


def _jobs() -> list[dict[str, Any]]:
    app = _get("")[0]["id"]
    return list(_get(f"/{app}/jobs"))


def _at(stamp: str) -> float:
    return datetime.strptime(stamp.replace("GMT", "+0000"), "%Y-%m-%dT%H:%M:%S.%f%z").timestamp()


def _seconds(job: dict[str, Any]) -> float:
    if not job.get("completionTime"):
        return 0.0
    return _at(job["completionTime"]) - _at(job["submissionTime"])


def seconds_any_job_ran(jobs: list[dict[str, Any]]) -> float:
    """The length of the union of the jobs' intervals."""
    spans = sorted((_at(j["submissionTime"]), _at(j["submissionTime"]) + _seconds(j)) for j in jobs)
    covered, end = 0.0, float("-inf")
    for start, stop in spans:
        covered += max(0.0, stop - max(start, end))
        end = max(end, stop)
    return covered


def group_of(job: dict[str, Any]) -> str:
    """Delta's status description without its numbers, else the job's call site."""
    description = (job.get("description") or "").strip()
    if description.startswith("Delta:"):
        return re.sub(r"[\s:]*[\d,]+(\s|$)", r"\1", description.splitlines()[0]).strip()
    return str(job.get("name", "?")).strip()


def summarise(jobs: list[dict[str, Any]]) -> dict[str, list[float]]:
    """group -> [jobs, stages, tasks, summed seconds]."""
    groups: dict[str, list[float]] = defaultdict(lambda: [0, 0, 0, 0.0])
    for job in jobs:
        entry = groups[group_of(job)]
        entry[0] += 1
        entry[1] += len(job.get("stageIds", []))
        entry[2] += job.get("numTasks", 0)
        entry[3] += _seconds(job)
    return dict(groups)


def measure(games: int, new: int, warm_cycles: int) -> tuple[float, list[dict[str, Any]]]:
    root, state, spark = open_lakehouse(games)
    project = root / "project"
    bronze = root / "warehouse" / "bronze" / "game_events"
    watch = BronzeWatch(bronze, ReaderMarks(root / "warehouse" / "spark" / "silver.db"))
    runner = WarmDbt(project, project / "profiles", parses=0)
    try:
        for cycle in range(warm_cycles + 1):
            _land(spark, bronze, _bronze_rows(spark, state["next_id"], new, state["games"], 0.01))
            state["next_id"] += new
            before = {job["jobId"] for job in _jobs()}
            took, results, _ = _cycle(runner, spark, None, "refresh", watch, new, gold_threads=2)
            failed = [r.node.name for r in results if r.status not in ("success", "pass")]
            if failed:
                raise SystemExit(f"cycle_jobs: the cycle failed: {failed}")
            print(f"cycle_jobs: cycle {cycle + 1} of {warm_cycles + 1}: {took:.1f} s", flush=True)
        return took, [job for job in _jobs() if job["jobId"] not in before]
    finally:
        (root / "state.json").write_text(json.dumps(state))
        spark.stop()


def report(
    games: int, new: int, warm_cycles: int, took: float, jobs: list[dict[str, Any]], top: int
) -> list[str]:
    groups = summarise(jobs)
    ranked = sorted(groups.items(), key=lambda item: -item[1][3])
    total = [sum(entry[i] for entry in groups.values()) for i in range(4)]
    lines = [
        f"- {games} games, {new:,} new events for all of them; the cycle after {warm_cycles} warm ones: "
        f"{took:.1f} s wall, {total[0]:.0f} Spark jobs, {total[1]:.0f} stages, {total[2]:.0f} tasks, "
        f"{total[3]:.1f} s of job time summed; at least one job running {seconds_any_job_ran(jobs):.1f} s "
        "of the wall",
        "",
        "| jobs started by | jobs | stages | tasks | summed s |",
        "|---|---:|---:|---:|---:|",
    ]
    for group, (count, stages, tasks, seconds) in ranked[:top]:
        lines.append(f"| {group[:110]} | {count:.0f} | {stages:.0f} | {tasks:.0f} | {seconds:.2f} |")
    rest = ranked[top:]
    if rest:
        count, stages, tasks, seconds = (sum(entry[i] for _, entry in rest) for i in range(4))
        lines.append(
            f"| {len(rest)} more groups | {count:.0f} | {stages:.0f} | {tasks:.0f} | {seconds:.2f} |"
        )
    return lines


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--games", type=int, default=5)
    parser.add_argument("--new", type=int, default=6000)
    parser.add_argument("--warm-cycles", type=int, default=8)
    parser.add_argument("--top", type=int, default=25)
    args = parser.parse_args(argv)
    took, jobs = measure(args.games, args.new, args.warm_cycles)
    lines = report(args.games, args.new, args.warm_cycles, took, jobs, args.top)
    heading = "# The Spark jobs of a warm refresh cycle, by what started them (bench/cycle_jobs.py)\n"
    append_section(RESULTS, "Spark jobs of one warm cycle", lines, heading=heading)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
