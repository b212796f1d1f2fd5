"""Which JVM threads spend a warm refresh cycle's CPU: Spark's tasks, the JIT compilers, GC.

    python -m bench.jvm_cpu [--new 6000] [--cycles 3] [--spread-minutes 0.5]
                            [--setting KEY=VALUE ...] [--label text]

bench/refresh_profile.py shows that a cycle's CPU is the JVM's, not dbt's. This splits the JVM's
by thread. On the 5-game lakehouse bench.refresh_profile keeps (.cache/bench-profile/games-5,
made there first), one process runs ``--cycles`` refresh cycles of ``--new`` new events each (their
event times spread over the ``--spread-minutes`` before they land) in one Spark session, as
`ingest refresh` runs them: the slice, then the games with rows, silver on one thread and gold on
the refresh's default threads, interpreted or compiled as the refresh chooses. Before and after
each cycle it reads the user + system CPU of every thread of the Spark JVM from
``/proc/<pid>/task/*/stat`` and sums it by thread name (``C2 CompilerThread0`` and ``1`` are one
name). ``--setting`` adds a Spark setting to the session's (ingest/core/spark/session.py), e.g.
``spark.driver.extraJavaOptions=-XX:TieredStopAtLevel=1``; a JVM option is appended to the
project's own (another collector than the project's: ``GAMELAKE_SPARK_JVM_OPTIONS=-XX:+UseG1GC``,
as the JVM refuses two), and the refresh's codegen choice stands unless a setting names codegen.
The first cycle of the process is cold, the others warm; each also counts the classes Spark
generated and compiled (codegen cache misses). A last line sums the warm cycles: median wall and
JVM CPU, and the CPU of the garbage collector's threads and of the JIT compilers'. Printed and
appended to bench/results/jvm_cpu.md with the machine and date.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import statistics
import time
from collections import Counter
from pathlib import Path
from typing import Any

from bench.incremental import _bronze_rows, _copy_project, _land
from bench.refresh_profile import WORK, Recorder, _cycle
from bench.results_file import append_section
from ingest.core.settings.paths import PROJECT_DIR
from ingest.ops.bronze_marks import ReaderMarks
from ingest.ops.bronze_watch import BronzeWatch
from ingest.ops.codegen_mode import FACTORY_MODE, WHOLE_STAGE
from ingest.ops.refresh_command import DEFAULT_GOLD_THREADS
from ingest.ops.warm_dbt import WarmDbt

RESULTS = PROJECT_DIR / "bench" / "results" / "jvm_cpu.md"
LAKEHOUSE = WORK / "games-5"
NEW_EVENTS = 6000
SHOWN = 10  # thread names per cycle in the table
ENDED = "(threads that ended: /proc drops their count, so this row makes the sum the process's)"
# thread names (as cpu_by_thread sums them) of the garbage collector and of the JIT compilers
GC_THREADS = re.compile(r"^(GC Thread|G1 |VM Thread|VM Periodic)")
JIT_THREADS = re.compile(r"^(C1 CompilerThre|C2 CompilerThre|Sweeper thread)")


def cpu_by_thread(pid: int) -> dict[str, float]:
    """CPU seconds so far of each thread of process ``pid``, summed by thread name."""
    ticks = os.sysconf("SC_CLK_TCK")
    used: Counter[str] = Counter()  # clock ticks
    for task in Path(f"/proc/{pid}/task").iterdir():
        try:
            name = (task / "comm").read_text().strip()
            fields = (task / "stat").read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue  # the thread ended
        used[re.sub(r"[-#]?\d+$", "", name).strip()] += int(fields[11]) + int(fields[12])
    return {name: count / ticks for name, count in used.items()}


def process_cpu(pid: int) -> float:
    """CPU seconds so far of process ``pid``, its ended threads' included (a thread's own count
    leaves /proc with it, so the sum by thread name can fall across a cycle)."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def codegen_compiles(spark: Any) -> tuple[int, float]:
    """(classes Spark compiled so far, their compile time s): codegen cache misses."""
    metrics = spark._jvm.org.apache.spark.metrics.source.CodegenMetrics
    histogram = metrics.METRIC_COMPILATION_TIME()
    count = int(histogram.getCount())
    return count, count * float(histogram.getSnapshot().getMean()) / 1000


def _session(settings: dict[str, str]) -> Any:
    from pyspark.sql import SparkSession

    from ingest.core.spark.session import spark_settings

    merged = spark_settings(LAKEHOUSE / "warehouse")
    for key, value in settings.items():
        joined = key == "spark.driver.extraJavaOptions" and key in merged
        merged[key] = f"{merged[key]} {value}" if joined else value
    builder = SparkSession.builder.enableHiveSupport()
    for key, value in merged.items():
        builder = builder.config(key, value)
    session = builder.getOrCreate()
    session.sparkContext.setLogLevel("ERROR")
    return session


def run(
    settings: dict[str, str], new_events: int = NEW_EVENTS, cycles: int = 3, spread_minutes: float = 0.5
) -> list[str]:
    if not (LAKEHOUSE / "state.json").exists():
        raise SystemExit(f"{LAKEHOUSE}: run `python -m bench.refresh_profile --games 5` first")
    state = json.loads((LAKEHOUSE / "state.json").read_text())
    project = LAKEHOUSE / "project"
    _copy_project(project, state["games"])
    os.environ["GAMELAKE_BRONZE_PATH"] = str(LAKEHOUSE / "warehouse" / "bronze" / "game_events")
    spark = _session(settings)
    jvm = spark.sparkContext._gateway.proc.pid  # spark-submit execs the JVM under this pid
    bronze = LAKEHOUSE / "warehouse" / "bronze" / "game_events"
    watch = BronzeWatch(bronze, ReaderMarks(LAKEHOUSE / "warehouse" / "spark" / "silver.db"))
    runner = WarmDbt(project, project / "profiles")
    # the refresh's own choice of compiled or interpreted, unless a setting names codegen
    rows = None if {WHOLE_STAGE, FACTORY_MODE} & settings.keys() else new_events
    body = [
        f"- settings added: {settings or 'none'}; {new_events:,} new events a cycle, 5 games, event "
        f"times over the {spread_minutes:g} minutes before they land",
        "",
    ]
    warm: list[tuple[float, Counter[str]]] = []
    try:
        for number in range(1, cycles + 1):
            batch = _bronze_rows(spark, state["next_id"], new_events, state["games"], spread_minutes / 1440)
            _land(spark, bronze, batch)
            state["next_id"] += new_events
            compiled = codegen_compiles(spark)
            before, total, started = cpu_by_thread(jvm), process_cpu(jvm), time.monotonic()
            _cycle(
                runner,
                spark,
                Recorder(),
                "refresh",
                watch,
                rows,
                gold_threads=DEFAULT_GOLD_THREADS,
                gold_interpreted=True,
            )
            wall, after = time.monotonic() - started, cpu_by_thread(jvm)
            used = {name: after[name] - before.get(name, 0.0) for name in after}
            used[ENDED] = process_cpu(jvm) - total - sum(used.values())
            spent = Counter(used)
            count, seconds = (a - b for a, b in zip(codegen_compiles(spark), compiled, strict=True))
            if number > 1:
                warm.append((wall, spent))
            body += [
                f"cycle {number} ({'cold' if number == 1 else 'warm'}): wall {wall:.1f} s, JVM CPU "
                f"{sum(spent.values()):.1f} s, {count:,} generated classes compiled in {seconds:.1f} s",
                "",
                "| JVM thread | CPU s |",
                "|---|---:|",
                *(f"| {name} | {seconds:.1f} |" for name, seconds in spent.most_common(SHOWN)),
                "",
            ]
    finally:
        (LAKEHOUSE / "state.json").write_text(json.dumps(state))
        spark.stop()
    return body + _warm_summary(warm)


def _warm_summary(warm: list[tuple[float, Counter[str]]]) -> list[str]:
    """The warm cycles' medians: wall, the JVM's CPU, its GC threads' and its JIT compilers'."""
    if not warm:
        return []

    def median_of(pattern: re.Pattern[str] | None) -> float:
        picked = (sum(s for name, s in cpu.items() if not pattern or pattern.search(name)) for _, cpu in warm)
        return statistics.median(picked)

    return [
        f"- warm cycles ({len(warm)}), medians: wall {statistics.median(w for w, _ in warm):.1f} s, "
        f"JVM CPU {median_of(None):.1f} s, of it GC {median_of(GC_THREADS):.1f} s and JIT "
        f"{median_of(JIT_THREADS):.1f} s",
        "",
    ]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--setting", action="append", default=[], help="KEY=VALUE, added to the session's")
    parser.add_argument("--label", default="")
    parser.add_argument("--new", type=int, default=NEW_EVENTS, help="new events a cycle")
    parser.add_argument("--cycles", type=int, default=3, help="cycles in the process, the first cold")
    parser.add_argument("--spread-minutes", type=float, default=0.5, help="event times before they land")
    args = parser.parse_args()
    settings = dict(item.split("=", 1) for item in args.setting)
    title = "A refresh cycle's JVM CPU by thread" + (f" ({args.label})" if args.label else "")
    body = run(settings, args.new, args.cycles, args.spread_minutes)
    append_section(RESULTS, title, body, heading="# Which JVM threads spend a refresh cycle's CPU\n")


if __name__ == "__main__":
    main()
