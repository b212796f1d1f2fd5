"""Where a steady refresh cycle's wall time goes: a wall-clock profile of the Spark driver's threads.

    python -m bench.wall_profile [--new 6000] [--cycles 12] [--profile-from 8] [--interval-ms 5]

bench/jvm_cpu.py counts the CPU of the JVM's threads; a cycle that uses less than its cores waits,
and a CPU profile does not see waits. This samples every thread of the driver, running or not,
with async-profiler (``event=wall``; 4.6 from Maven Central, resolved into .cache/jvm by Maven,
started through its Java API on the driver's class path). On the 5-game lakehouse
bench.refresh_profile keeps, one process runs ``--cycles`` refresh cycles of ``--new`` events as
bench.jvm_cpu does, and profiles from cycle ``--profile-from`` on: the JIT takes about 8 warm
cycles to settle (bench/results/jvm_cpu.md, stop 65), and a refresh runs for hours.

The statement threads (py4j's, which run dbt's statements) are sorted by what their stacks show:
waiting for dbt's next statement, waiting for a Spark job's tasks or an adaptive query's stages,
a process Hadoop started, Delta's commit and log reads, analysis and planning; the executor's
task threads by running or idle. Delta's snapshot work is also sorted by what asked for it: a
scan's or a write's file list, an overwrite's domain metadata, the optimizer's size of a table
(the last two rebuild the snapshot's whole state, ``Snapshot.computedState``). Printed and
appended to bench/results/wall_profile.md with the machine and date; the collapsed stacks stay
in .cache/bench-profile/wall-profile.collapsed.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import time
import zipfile
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from gamelake_dev.localstack.artifacts import copy_artifact

from bench.incremental import _bronze_rows, _copy_project, _land
from bench.jvm_cpu import LAKEHOUSE, _session
from bench.refresh_profile import WORK, Recorder, _cycle
from bench.results_file import append_section
from ingest.core.settings.paths import JVM_DIR, PROJECT_DIR
from ingest.ops.bronze_marks import ReaderMarks
from ingest.ops.bronze_watch import BronzeWatch
from ingest.ops.refresh_command import DEFAULT_GOLD_THREADS as GOLD
from ingest.ops.warm_dbt import WarmDbt

RESULTS = PROJECT_DIR / "bench" / "results" / "wall_profile.md"
PROFILER_VERSION = "4.6"
PROFILER_JAR = JVM_DIR / f"async-profiler-{PROFILER_VERSION}.jar"
PROFILER_LIBRARY = JVM_DIR / f"async-profiler-{PROFILER_VERSION}" / "libasyncProfiler.so"
STACKS = WORK / "wall-profile.collapsed"
SHOWN = 12
WAITING = ("park", "Park", "read", "accept", "wait", "Wait", "poll", "forkAndExec", "spawn")
# what a statement thread's stack shows, first match wins: (frame text, what it is)
STATEMENT_PARTS = (
    ("Shell.runCommand", "a process Hadoop started (chmod, readlink)"),
    ("DAGScheduler.runJob", "a Spark job: waiting for its tasks"),
    ("AdaptiveSparkPlanExec.$anonfun$withFinalPlanUpdate", "an adaptive query: waiting for its stages"),
    ("awaitResult", "waiting for a future (broadcast, subquery)"),
    ("OptimisticTransactionImpl.commit", "Delta's commit"),
    ("Snapshot", "Delta: a snapshot (file list, stats)"),
    ("DeltaLog", "Delta: the log (listing, reading)"),
    ("Analyzer", "analysis"),
    ("Optimizer", "optimizer"),
    ("QueryPlanner", "physical planning"),
    ("HiveExternalCatalog", "the Hive metastore"),
)
# what asked Delta for a snapshot's state, first match wins: (frame text, what it is)
SNAPSHOT_ASKERS = (
    ("getNewDomainMetadata", "an overwrite: the replaced snapshot's domain metadata (its whole state)"),
    ("TahoeLogFileIndex.sizeInBytes", "the optimizer: a table's size (its whole state)"),
    ("OptimisticTransactionImpl.filterFiles", "a write: the files it replaces or checks"),
    ("OptimisticTransactionImpl.filesForScan", "a read of the table being written, in its transaction"),
    ("PrepareDeltaScanBase.filesForScan", "a read: the files a scan takes (data skipping)"),
    ("DeltaTableV2.tableSchema", "analysis: a table's schema"),
)


def profiler_library() -> Path:
    """async-profiler's Linux x64 library, resolved from Maven Central once."""
    if not PROFILER_LIBRARY.is_file():
        copy_artifact(f"tools.profiler:async-profiler:{PROFILER_VERSION}", PROFILER_JAR, "async-profiler")
        PROFILER_LIBRARY.parent.mkdir(parents=True, exist_ok=True)
        with zipfile.ZipFile(PROFILER_JAR) as jar:
            PROFILER_LIBRARY.write_bytes(jar.read("linux-x64/libasyncProfiler.so"))
    return PROFILER_LIBRARY


def stacks(path: Path) -> Iterator[tuple[str, list[str], int]]:
    """(thread name without its number, frames from the root, samples) of a collapsed profile."""
    with open(path) as lines:
        for line in lines:
            stack, samples = line.rstrip().rsplit(" ", 1)
            thread, *frames = stack.split(";")
            name = re.sub(r"\s*tid=\d+\]$", "", thread).lstrip("[")
            yield re.sub(r"[-#]?\s*\d+$", "", name).strip(), frames, int(samples)


def statement_part(frames: list[str]) -> str | None:
    """What a py4j thread's stack shows, or None for a thread that runs no statement."""
    text = ";".join(frames)
    if "py4j" not in text:
        return None
    if not any(frame.startswith(("org/apache/spark", "io/delta")) for frame in frames):
        return "idle: waiting for a call from Python (dbt)"
    state = "blocked" if any(word in frames[-1] for word in WAITING) else "on CPU"
    part = next((what for marker, what in STATEMENT_PARTS if marker in text), "other Spark work")
    return f"{part}, {state}"


def summarise(path: Path, wall: float, cycles: int, interval: float) -> list[str]:
    statement: Counter[str] = Counter()
    executor: Counter[str] = Counter()
    leaves: Counter[str] = Counter()
    askers: Counter[str] = Counter()
    for thread, frames, samples in stacks(path):
        part = statement_part(frames)
        if part is not None:
            statement[part] += samples
            if not part.startswith("idle"):
                leaves[_leaf(frames)] += samples
            if part.startswith("Delta: a snapshot"):
                askers[_snapshot_asker(frames)] += samples
        elif thread.startswith("Executor task"):
            executor[_executor_state(frames)] += samples
    per_cycle = interval / cycles
    return [
        f"- {cycles} profiled cycles, {wall:.1f} s of wall ({wall / cycles:.1f} s a cycle); every "
        f"thread sampled each {interval * 1000:g} ms; seconds below are thread-seconds a cycle",
        "",
        "| statement threads (py4j): what the stack shows | s a cycle |",
        "|---|---:|",
        *(f"| {part} | {count * per_cycle:.2f} |" for part, count in statement.most_common()),
        "",
        "| executor task threads | s a cycle |",
        "|---|---:|",
        *(f"| {state} | {count * per_cycle:.2f} |" for state, count in executor.most_common()),
        "",
        "Statement threads, not waiting for dbt: the innermost Spark, Delta or Hadoop frames",
        "",
        "| s a cycle | frames, innermost first |",
        "|---:|---|",
        *(f"| {count * per_cycle:.2f} | {leaf} |" for leaf, count in leaves.most_common(SHOWN)),
        "",
        "Statement threads in Delta's snapshot work (the row above, on CPU and blocked): what asked for it",
        "",
        "| what asked for the snapshot's state | s a cycle |",
        "|---|---:|",
        *(f"| {asker} | {count * per_cycle:.2f} |" for asker, count in askers.most_common()),
        "",
    ]


def _snapshot_asker(frames: list[str]) -> str:
    text = ";".join(frames)
    return next((what for marker, what in SNAPSHOT_ASKERS if marker in text), "other")


def _executor_state(frames: list[str]) -> str:
    if not any(".runTask" in frame for frame in frames):
        return "idle"
    return "running a task, " + ("blocked" if any(word in frames[-1] for word in WAITING) else "on CPU")


def _leaf(frames: list[str]) -> str:
    ours = [
        frame.split("(")[0]
        for frame in frames
        if frame.startswith(("org/apache", "io/delta")) and "$$Lambda" not in frame
    ]
    shown = " < ".join(frame.rsplit("/", 1)[-1] for frame in reversed(ours[-3:]))
    return f"`{shown}`" if shown else "(JDK frames only)"


@dataclass
class Lakehouse:
    """The bench's lakehouse with the Spark session, the dbt runner and the watch of bronze."""

    spark: Any
    state: dict[str, Any]
    runner: WarmDbt
    watch: BronzeWatch
    bronze: Path = LAKEHOUSE / "warehouse" / "bronze" / "game_events"

    def cycle(self, new_events: int) -> float:
        """Land ``new_events`` in bronze, then run one refresh cycle: its wall time."""
        batch = _bronze_rows(self.spark, self.state["next_id"], new_events, self.state["games"], 0.5 / 1440)
        _land(self.spark, self.bronze, batch)
        self.state["next_id"] += new_events
        started = time.monotonic()
        _cycle(
            self.runner,
            self.spark,
            Recorder(),
            "refresh",
            self.watch,
            new_events,
            gold_threads=GOLD,
            gold_interpreted=True,
        )
        return time.monotonic() - started


def _open(library: Path) -> tuple[Lakehouse, Any]:
    state = json.loads((LAKEHOUSE / "state.json").read_text())
    project = LAKEHOUSE / "project"
    _copy_project(project, state["games"])
    os.environ["GAMELAKE_BRONZE_PATH"] = str(Lakehouse.bronze)
    spark = _session({"spark.driver.extraClassPath": str(PROFILER_JAR)})
    watch = BronzeWatch(Lakehouse.bronze, ReaderMarks(LAKEHOUSE / "warehouse" / "spark" / "silver.db"))
    lakehouse = Lakehouse(spark, state, WarmDbt(project, project / "profiles"), watch)
    return lakehouse, spark._jvm.one.profiler.AsyncProfiler.getInstance(str(library))


def run(new_events: int, cycles: int, profile_from: int, interval_ms: float) -> list[str]:
    lakehouse, profiler = _open(profiler_library())
    walls: list[str] = []
    profiled = 0.0
    try:
        for number in range(1, cycles + 1):
            if number == profile_from:
                profiler.execute(f"start,event=wall,interval={round(interval_ms * 1e6)},threads")  # ns
            wall = lakehouse.cycle(new_events)
            profiled += wall if number >= profile_from else 0.0
            walls.append(f"{wall:.1f}{'*' if number >= profile_from else ''}")
            print(f"cycle {number}: {wall:.1f} s", flush=True)
        profiler.execute(f"stop,file={STACKS},collapsed")
    finally:
        (LAKEHOUSE / "state.json").write_text(json.dumps(lakehouse.state))
        lakehouse.spark.stop()
    head = [
        f"- {new_events:,} new events a cycle, 5 games, as `ingest refresh` runs a cycle; cycles' wall s "
        f"(* profiled): {', '.join(walls)}",
    ]
    return head + summarise(STACKS, profiled, cycles - profile_from + 1, interval_ms / 1000)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--new", type=int, default=6000, help="new events a cycle")
    parser.add_argument("--cycles", type=int, default=12, help="cycles in the process, the first cold")
    parser.add_argument("--profile-from", type=int, default=8, help="the first profiled cycle")
    parser.add_argument("--interval-ms", type=float, default=5.0, help="sampling interval of every thread")
    parser.add_argument("--label", default="")
    args = parser.parse_args()
    if not 1 <= args.profile_from <= args.cycles:
        raise SystemExit(f"--profile-from {args.profile_from}: give a cycle from 1 to --cycles {args.cycles}")
    if not (LAKEHOUSE / "state.json").exists():
        raise SystemExit(f"{LAKEHOUSE}: run `python -m bench.refresh_profile --games 5` first")
    title = "Where a steady refresh cycle's wall time goes" + (f" ({args.label})" if args.label else "")
    body = run(args.new, args.cycles, args.profile_from, args.interval_ms)
    append_section(RESULTS, title, body, heading=f"# {title.split(' (')[0]} (bench/wall_profile.py)\n")


if __name__ == "__main__":
    main()
