"""Where one gold write spends its time inside the JVM: Java Flight Recorder samples by method.

    python -m bench.driver_profile [--game space_raiders] [--shape "merge as built"] [--runs 8]
    python -m bench.driver_profile --sql-file <a compiled dbt node, e.g. a test's SQL>

bench/gold_daily_shapes.py found a daily-active write (61 rows, one file) spends about half its
wall time in Spark jobs and half on the driver between them. This names the methods. On the
5-game lakehouse bench.refresh_profile keeps, in one warm session, a copy of
``gold_<game>_daily_active`` takes ``--shape`` (a shape of bench/gold_daily_shapes.py) two times
to warm up, then ``--runs`` times under the JDK's own sampling profiler (``jcmd JFR.start``,
the ``profile`` settings: a running thread's stack every 10 ms, a thread in native code every
20 ms). A thread that waits (on a Spark job, a lock) is not sampled, so the samples of the
statement's thread are its driver work, and the executor threads' samples are the jobs' work.

Appended to bench/results/gold_merge.md: samples per thread kind, and for the statement's thread
the methods by inclusive share (the Delta, Catalyst and execution frames under which its samples
fall) and by self share (the frame that was running).
"""

from __future__ import annotations

import argparse
import json
import os
import re
import subprocess
import tempfile
import time
from collections import Counter
from pathlib import Path
from typing import Any

from bench.gold_daily_shapes import _shapes, copy_with_touched_dates
from bench.gold_merge_shapes import open_lakehouse
from bench.results_file import append_section
from ingest.core.settings.paths import PROJECT_DIR
from ingest.ops.codegen_mode import set_mode

RESULTS = PROJECT_DIR / "bench" / "results" / "gold_merge.md"
# deep enough for a Spark statement's whole stack, so every sample reaches its root
os.environ["JAVA_TOOL_OPTIONS"] = "-XX:FlightRecorderOptions:stackdepth=2048"
OWN_CODE = tuple(f"org.apache.spark.sql.{part}." for part in ("delta", "catalyst", "execution"))
# frames that wrap every step (logging, tree walks, execution plumbing): they name no step
WRAPPERS = re.compile(
    r"Lambda|anonfun|\$\$super|recordFrameProfile|recordDeltaOperation|recordOperation|recordMergeOperation"
    r"|withStatusCode|withJobDescription|\.trees\.|AnalysisHelper|RuleExecutor|QueryExecution|SQLExecution"
    r"|QueryPlanningTracker|withNewTransaction|\.apply$|\.run$|ExecutedCommandExec|lzycompute"
)
PY4J, SPARK = "py4j.", "org.apache.spark."
SAMPLES = "jdk.ExecutionSample,jdk.NativeMethodSample"
# what a task runs: Spark's own code and Janino, the compiler of generated classes
EXECUTOR_CODE = (SPARK, "org.codehaus.janino.")


def _frames(event: dict[str, Any]) -> list[str]:
    """The sample's stack, leaf first, as ``class.method``."""
    trace = event["values"].get("stackTrace") or {"frames": []}
    return [f"{f['method']['type']['name'].replace('/', '.')}.{f['method']['name']}" for f in trace["frames"]]


def _step(frame: str) -> str:
    """``delta.Snapshot.filesForScan`` for ``org.apache.spark.sql.delta.Snapshot.filesForScan$``."""
    return frame.removeprefix("org.apache.spark.sql.").rstrip("$")


def _class(frame: str) -> str:
    """``sql.catalyst.expressions.codegen.CodeFormatter`` for any of its methods or closures."""
    return frame.rsplit(".", 1)[0].split("$")[0].removeprefix("org.apache.spark.")


def _thread_kind(event: dict[str, Any], frames: list[str]) -> str:
    name = (event["values"].get("sampledThread") or {}).get("javaName") or "?"
    if event["type"] == "jdk.NativeMethodSample" and not any(f.startswith(SPARK) for f in frames):
        return "idle in native code: sockets, polls (not counted)"
    if any(f.startswith(PY4J) for f in frames):  # the call from Python: sql(), then collect()
        return "the statement's thread (driver)"
    if name.startswith("Executor task"):  # JFR keeps the name a thread started with
        return "executor tasks (the jobs' work)"
    return f"other: {name.split('-')[0].split(' ')[0]}"


def _jcmd(spark: Any, *command: str) -> None:
    pid = spark.sparkContext._gateway.proc.pid  # spark-submit execs the JVM under this pid
    subprocess.run(["jcmd", str(pid), *command], check=True, capture_output=True)


def _record(spark: Any, sql: str, runs: int, jfr: Path) -> list[float]:
    _jcmd(spark, "JFR.start", "name=gl", "settings=profile")
    walls = []
    for _ in range(runs):
        started = time.perf_counter()
        spark.sql(sql).collect()
        walls.append(time.perf_counter() - started)
    _jcmd(spark, "JFR.dump", "name=gl", f"filename={jfr}")
    _jcmd(spark, "JFR.stop", "name=gl")
    return walls


def _samples(jfr: Path) -> list[dict[str, Any]]:
    printed = subprocess.run(
        ["jfr", "print", "--json", "--stack-depth", "2048", "--events", SAMPLES, str(jfr)],
        check=True,
        capture_output=True,
        text=True,
    ).stdout
    events: list[dict[str, Any]] = json.loads(printed)["recording"]["events"]
    return events


def _tables(events: list[dict[str, Any]], runs: int, top: int) -> list[str]:
    kinds: Counter[str] = Counter()
    inclusive: Counter[str] = Counter()
    leaf: Counter[str] = Counter()
    on_executors: Counter[str] = Counter()
    statement = executor = 0
    for event in events:
        frames = _frames(event)
        kind = _thread_kind(event, frames)
        kinds[kind] += 1
        if kind.startswith("the statement"):
            statement += 1
            leaf[frames[0] if frames else "?"] += 1
            inclusive.update({_step(f) for f in frames if f.startswith(OWN_CODE) and not WRAPPERS.search(f)})
        elif kind.startswith("executor"):
            executor += 1
            on_executors.update({_class(f) for f in frames if f.startswith(EXECUTOR_CODE)})
    lines = ["", "| thread | samples | per run |", "|---|---:|---:|"]
    lines += [f"| {k} | {n} | {n / runs:.1f} |" for k, n in kinds.most_common(10)]
    lines += ["", f"The statement's thread, {statement} samples: methods by inclusive share", ""]
    lines += ["| step (Delta, Catalyst, execution method) | samples | share |", "|---|---:|---:|"]
    shown = inclusive.most_common(top)
    lines += [f"| `{m}` | {n} | {n / max(statement, 1):.0%} |" for m, n in shown]
    lines += ["", "| running frame (self) | samples | share |", "|---|---:|---:|"]
    lines += [f"| `{m}` | {n} | {n / max(statement, 1):.0%} |" for m, n in leaf.most_common(top // 2)]
    lines += ["", f"Executor tasks, {executor} samples: classes by inclusive share", ""]
    lines += ["| class | samples | share |", "|---|---:|---:|"]
    shown = [(c, n) for c, n in on_executors.most_common() if n < executor][: top // 2]
    return lines + [f"| `{c}` | {n} | {n / max(executor, 1):.0%} |" for c, n in shown]


def run(game: str, shape: str, runs: int, top: int, sql_file: Path | None, interpreted: bool) -> list[str]:
    gold, silver = f"gold.gold_{game}_daily_active", f"silver.silver_{game}"
    spark, last = open_lakehouse(silver)
    set_mode(spark, interpreted)
    first = max(last - 2, 1)
    touched, dates = copy_with_touched_dates(spark, gold, silver, first, last)
    sql = sql_file.read_text() if sql_file else _shapes(silver, first, last, dates, game)[shape]
    shape = f"{sql_file.name}" if sql_file else shape
    unprofiled = []
    for _ in range(3):
        started = time.perf_counter()
        spark.sql(sql).collect()
        unprofiled.append(time.perf_counter() - started)
    jfr = Path(tempfile.gettempdir()) / "gamelake-driver-profile.jfr"  # kept for `jfr` or JMC
    walls = _record(spark, sql, runs, jfr)
    events = _samples(jfr)
    spark.sql("drop table dc")
    spark.stop()
    walls.sort()
    shown = (
        f"- `{gold}` copy, shape `{shape}`, {'interpreted' if interpreted else 'compiled'},"
        f" {touched} touched date(s); {runs} runs under JFR"
        f" after 3 runs without it: median {walls[len(walls) // 2]:.2f} s, min {walls[0]:.2f} s"
        f" (without: {', '.join(f'{w:.2f}' for w in unprofiled)} s)"
    )
    return [shown, *_tables(events, runs, top)]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--game", default="space_raiders")
    parser.add_argument("--shape", default="merge as built")
    parser.add_argument("--runs", type=int, default=8)
    parser.add_argument("--top", type=int, default=30)
    parser.add_argument("--interpreted", action="store_true", help="as a small refresh cycle runs")
    parser.add_argument("--sql-file", type=Path, help="profile this statement instead (a compiled dbt node)")
    args = parser.parse_args()
    body = run(args.game, args.shape, args.runs, args.top, args.sql_file, args.interpreted)
    title = f"Inside {args.sql_file.name}" if args.sql_file else "Inside one daily-active write"
    append_section(RESULTS, f"{title}: JFR samples by method", body)


if __name__ == "__main__":
    main()
