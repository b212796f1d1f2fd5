"""Where a warm refresh cycle's time goes: every Spark statement dbt sends, per model, with its
time; the rest of each node's time; the Delta commits each model makes; and the CPU time the
Python process (dbt) and the JVM (Spark) each spent in the cycle.

    python -m bench.refresh_profile [--games 5 60] [--active N] [--cycle refresh|build] [--new 6000]
                                    [--warm-cycles 1]
                                    [--parse once each] [--label before]

For each games count, a private lakehouse (bench.incremental's ``prepare``: the repo's dbt project
with a seed of that many active games, 60,000 events of history, a first build) is made once under
.cache/bench-profile and reused. Then, in one process and one Spark session, as the continuous
refresh runs it: ``--new`` events land in bronze (for the first ``--active`` games of the seed,
default all) and ``--warm-cycles`` cycles warm the session (one by default; the JIT settles after
about eight, bench/results/jvm_cpu.md, and a refresh runs for hours); more events land and the
profiled cycle runs. ``--cycle refresh`` (the default) is the continuous refresh's cycle: the
slice, then only the games with rows in it (ingest/ops/refresh_selection.py), silver's step on one
thread and gold's on the refresh's default threads, interpreted whatever the cycle's size;
``--cycle build`` is a plain ``dbt build`` of everything. ``--parse once`` (the default) parses the
project once and hands dbt the manifest, as the refresh does (ingest/ops/warm_dbt.py); ``each``
lets every invocation load it; both in one run give the ratio. dbt's events (``SQLQuery`` and
``SQLQueryStatus``, by node) come through a dbtRunner callback; a node's dbt time is its run time
less the time its statements took in Spark. Commits are the new versions in each model's
``_delta_log``.

A node's time outside its statements is not all dbt's Python: dbt-spark's session method runs a
SELECT's Spark job when dbt fetches its rows, after dbt has logged the statement as done. The
process CPU times tell the two apart: the Python process's own user + system time (``os.times``)
and the JVM's (``/proc/<pid>/stat`` of the Spark gateway), both over the profiled cycle. A
MERGE's statement is split into the steps Delta times itself, from the ``operationMetrics`` of
the commit it made: materializing the source, finding the touched files, rewriting them.

The figures are printed and appended, with machine, date and ``--label``, to
bench/results/refresh_profile.md.
"""

from __future__ import annotations

import argparse
import cProfile
import datetime as dt
import functools
import json
import os
import platform
import pstats
import re
import statistics
import subprocess
import sys
import time
from collections import defaultdict
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from bench.incremental import _bronze_rows, _copy_project, _land, _session, prepare, run_dbt
from ingest.core.settings.paths import PROJECT_DIR
from ingest.ops.bronze_marks import ReaderMarks
from ingest.ops.bronze_watch import BronzeWatch
from ingest.ops.codegen_mode import set_mode
from ingest.ops.cycle_facts import handing_cycle_facts
from ingest.ops.lakehouse_upkeep import UpkeepDone, UpkeepPolicy, Written, upkeep_written
from ingest.ops.refresh_command import DEFAULT_GOLD_THREADS, CycleSize, cycle_lock
from ingest.ops.refresh_selection import (
    SLICE_MODEL,
    after_slice_args,
    build_after_slice,
    build_selection,
    read_slice_readers,
)
from ingest.ops.thread_sessions import sessions_for
from ingest.ops.warm_dbt import WarmDbt

RESULTS = PROJECT_DIR / "bench" / "results" / "refresh_profile.md"
WORK = PROJECT_DIR / ".cache" / "bench-profile"
HISTORY = 60_000
SPREAD_MINUTES = 14.4  # a batch's event times, before --spread-minutes: a hundredth of a day

# What a statement does, by the first pattern its text matches (dbt's query comment removed).
KINDS = [
    ("merge", r"^merge (with schema evolution )?into"),
    ("insert", r"^insert (with schema evolution )?(into|overwrite)"),
    ("create table as select", r"^create (or replace )?table"),
    ("create view", r"^create (or replace )?(temporary )?view"),
    ("drop", r"^drop "),
    ("mark: set or reset commit metadata", r"^(set|reset) spark\.databricks\.delta\.commitinfo"),
    ("batch dates recorded or read (silver check)", r"^set spark\.gamelake\.batch_dates\."),
    ("handed conf read (marks, rows)", r"^set spark\.gamelake\."),
    ("mark: show tblproperties", r"^show tblproperties"),
    ("mark: set tblproperties", r"^alter table .* set tblproperties"),
    ("describe history (Delta log)", r"^describe history"),
    ("describe", r"^describe"),
    ("show tables / schemas", r"^show (tables|views|table extended|schemas)"),
    ("event dates of the batch", r"^select distinct cast\(event_date"),
    ("slice bounds", r"slice_from_version"),
    ("build lock", r"build_lock"),
    ("select (test or macro query)", r"^(with|select)"),
]


@dataclass
class Node:
    name: str
    kind: str
    seconds: float = 0.0
    statements: list[tuple[str, float]] = field(default_factory=list)
    commits: int = 0

    @property
    def sql_seconds(self) -> float:
        return sum(s for _, s in self.statements)


def _kind(sql: str) -> str:
    text = re.sub(r"/\*.*?\*/", "", sql, flags=re.S)
    text = re.sub(r"--[^\n]*", "", text).strip().lower()
    text = re.sub(r"\s+", " ", text)
    for name, pattern in KINDS:
        if re.search(pattern, text):
            return name
    return " ".join(text.split()[:3]) or "(empty)"


class Recorder:
    """dbt's events during one invocation: each statement's text and time, by node."""

    def __init__(self) -> None:
        self.pending: dict[str, str] = {}  # node (or connection) -> its statement under way
        self.statements: dict[str, list[tuple[str, float]]] = defaultdict(list)
        self.first_event = self.first_node = self.last_node = self.last_event = 0.0
        self.invocations: list[tuple[str, float, float, float]] = []  # args, wall, before nodes, after

    def __call__(self, event: Any) -> None:
        name = event.info.name
        now = time.monotonic()
        self.first_event = self.first_event or now
        self.last_event = now
        if name == "NodeStart":
            self.first_node = self.first_node or now
        elif name == "NodeFinished":
            self.last_node = now
        if name not in ("SQLQuery", "SQLQueryStatus"):
            return
        node = event.data.node_info.unique_id or f"(run hooks: {event.data.node_info.node_name or '-'})"
        if name == "SQLQuery":
            self.pending[node] = event.data.sql
        elif node in self.pending:
            self.statements[node].append((_kind(self.pending.pop(node)), float(event.data.elapsed)))


def _dbt(runner: WarmDbt, recorder: Recorder | None, *args: str) -> tuple[float, Any]:
    """``dbt <args>``: parsed once (the refresh's WarmDbt) or, with ``runner.parses`` at -1, as
    a plain ``dbtRunner().invoke`` that loads the project each time; wall seconds and dbt's
    run result."""
    if runner.parses < 0:
        started = time.monotonic()
        took, result = run_dbt(runner.project, *args, callbacks=(recorder,) if recorder else ())
        _record_invocation(recorder, args, started, took)
        return took, result
    took, outcome = _invoke(runner, recorder, *args)
    return took, outcome.result


def _invoke(runner: WarmDbt, recorder: Recorder | None, *args: str) -> tuple[float, Any]:
    """``dbt <args>`` on the parse ``runner`` holds: wall seconds and dbt's ``dbtRunnerResult``."""
    started = time.monotonic()
    runner.callbacks[:] = [recorder] if recorder else []
    outcome = runner.invoke(*args)
    took = time.monotonic() - started
    _record_invocation(recorder, args, started, took)
    return took, outcome


def _record_invocation(recorder: Recorder | None, args: tuple[str, ...], started: float, took: float) -> None:
    if recorder is not None and recorder.first_node:
        # dbt's own time before its first node (load the manifest, the relation cache, on-run-start)
        # and after its last (on-run-end, the artifacts)
        before, after = recorder.first_node - started, started + took - recorder.last_node
        recorder.invocations.append((" ".join(args[:3]), took, before, after))
        recorder.first_node = recorder.last_node = 0.0


def _log_versions(warehouse: Path) -> dict[str, int]:
    """Every table's newest Delta version under Spark's warehouse, by table name."""
    found = {}
    for log in (warehouse / "spark").glob("*.db/*/_delta_log"):
        versions = [int(p.stem) for p in log.glob("*.json") if p.stem.isdigit()]
        found[log.parent.name] = max(versions, default=-1)
    return found


MERGE_STEPS = ("materializeSourceTimeMs", "scanTimeMs", "rewriteTimeMs", "executionTimeMs")


def _merge_steps(warehouse: Path) -> dict[str, dict[str, int]]:
    """Delta's own split of each table's newest commit when it is a MERGE (its commitInfo's
    operationMetrics): materializing the source, finding the touched files, rewriting them."""
    found = {}
    for log in (warehouse / "spark").glob("*.db/*/_delta_log"):
        newest = max(
            (p for p in log.glob("*.json") if p.stem.isdigit()), key=lambda p: int(p.stem), default=None
        )
        for line in newest.read_text().splitlines() if newest else []:
            info = json.loads(line).get("commitInfo")
            if info and info.get("operation") == "MERGE":
                metrics = info.get("operationMetrics", {})
                found[log.parent.name] = {k: int(v) for k, v in metrics.items() if v.lstrip("-").isdigit()}
    return found


def _cycle(
    project: WarmDbt,
    spark: Any,
    recorder: Recorder | None,
    cycle: str,
    watch: BronzeWatch,
    rows: int | None = None,
    second: Callable[[list[str]], list[str]] = after_slice_args,
    facts: bool = True,
    gold_threads: int = 1,
    gold_interpreted: bool = False,
    upkeep_policy: UpkeepPolicy | None = None,
    silver_step: Callable[[tuple[str, ...]], tuple[str, ...]] | None = None,
    gold_confs: dict[str, str] | None = None,
    silver_threads: int = 1,
) -> tuple[float, list[Any], UpkeepDone | None]:
    """One cycle as ``cycle`` says: its wall time, the results of every node it ran, and what the
    refresh's upkeep after it did (lakehouse_upkeep, under the same lock). Given the
    ``rows`` it reads, a refresh cycle runs compiled or interpreted as `ingest refresh` chooses;
    ``second`` makes its second invocation's arguments from the selection, ``facts``
    says whether the cycle's facts are handed over (ingest/ops/cycle_facts.py), as `ingest
    refresh` does, and ``gold_threads`` above 1 splits the second step into silver on one
    thread and gold on that many, as `ingest refresh --gold-threads` does (``second`` unused);
    ``gold_interpreted`` runs that gold step interpreted whatever the cycle's size;
    ``upkeep_policy`` is the upkeep's (the refresh's defaults without); ``silver_step``, given,
    rewrites the split step's silver invocation (its arguments in, the ones to run out);
    ``gold_confs`` are Spark confs set for that gold step (left set: the caller resets them);
    ``silver_threads`` above 1 builds silver on that many threads, each dbt thread on a Spark
    session of its own (ingest/ops/thread_sessions.py), as `ingest refresh --silver-threads` does."""
    if rows is not None and cycle == "refresh":
        set_mode(spark, CycleSize(pending_rows=rows).runs_interpreted())
    if cycle == "build":
        took, built = _dbt(project, recorder, "build")
        return took, list(built.results), None
    started = time.monotonic()
    watch.version()  # as `ingest refresh` polls bronze, then hands over what it read before a build
    watch.hand_versions_to(spark)
    results: list[Any] = []
    # the one build lock `ingest refresh` takes for the cycle's two invocations, timed with it
    with cycle_lock(watch.readers.silver_dir.parent) as held:
        given = ["--vars", json.dumps(held)] if held else []
        _, first = _dbt(project, recorder, "build", "--select", SLICE_MODEL, *given)
        results += first.results
        readers = read_slice_readers(spark)
        selection = build_selection(readers)
        tables_dir = watch.readers.silver_dir.parent
        with handing_cycle_facts(spark, tables_dir, readers, bool(held) and facts) as hand_gold_step:
            if selection and gold_threads > 1:

                def before_gold() -> None:
                    watch.hand_table_versions_to(spark)
                    hand_gold_step()
                    if gold_interpreted:
                        set_mode(spark, True)
                    for key, value in (gold_confs or {}).items():
                        spark.conf.set(key, value)

                def invoke(*args: str) -> Any:
                    if silver_step is not None and "--indirect-selection" not in args:  # not gold's
                        args = silver_step(args)
                    _, step = _invoke(project, recorder, *args)
                    results.extend(step.result.results if step.result is not None else ())
                    return step

                sessions = functools.partial(sessions_for, spark, silver_threads)
                build_after_slice(
                    invoke, selection, given, gold_threads, before_gold, silver_threads, sessions
                )
            elif selection:
                _, games = _dbt(project, recorder, *second(selection), *given)
                results += games.results
        written = Written(tuple(readers.games_to_build()), readers.quarantine_to_build())
        upkeep = upkeep_written(spark, tables_dir, written, upkeep_policy or UpkeepPolicy())
    return time.monotonic() - started, results, upkeep


def _cpu_seconds(spark: Any) -> dict[str, float]:
    """User + system CPU seconds so far of this Python process and of the Spark JVM it drives."""
    own = os.times()
    ticks = os.sysconf("SC_CLK_TCK")
    jvm = spark.sparkContext._gateway.proc.pid  # spark-submit execs the JVM under this pid
    fields = Path(f"/proc/{jvm}/stat").read_text().rsplit(")", 1)[1].split()
    return {"python": own.user + own.system, "jvm": (int(fields[11]) + int(fields[12])) / ticks}


def open_lakehouse(games: int) -> tuple[Path, dict[str, Any], Any]:
    """The private lakehouse of ``games`` games (made once), its project refreshed from the repo's
    code as it is now: its root, its state (games, next event id) and a Spark session on it."""
    root = WORK / f"games-{games}"
    if not (root / "state.json").exists():
        prepare(root, HISTORY, games)
    state = json.loads((root / "state.json").read_text())
    _copy_project(root / "project", state["games"])
    os.environ["GAMELAKE_BRONZE_PATH"] = str(root / "warehouse" / "bronze" / "game_events")
    return root, state, _session(root)


def profile(
    games: int,
    new: int,
    active: int,
    cycle: str,
    parse: str,
    python_profile: bool = False,
    spread_minutes: float = SPREAD_MINUTES,
    warm_cycles: int = 1,
) -> tuple[float, list[Node], dict[str, Any]]:
    root, state, spark = open_lakehouse(games)
    project = root / "project"
    bronze = root / "warehouse" / "bronze" / "game_events"
    receiving = state["games"][: active or None]
    watch = BronzeWatch(bronze, ReaderMarks(root / "warehouse" / "spark" / "silver.db"))
    runner = WarmDbt(project, project / "profiles", parses=0 if parse == "once" else -1)
    python = cProfile.Profile()
    warm: list[float] = []
    for round_ in (*["warm"] * warm_cycles, "profiled"):
        _land(spark, bronze, _bronze_rows(spark, state["next_id"], new, receiving, spread_minutes / 1440))
        state["next_id"] += new
        before = _log_versions(root / "warehouse")
        recorder = Recorder()
        cpu_before = _cpu_seconds(spark)
        if python_profile and round_ == "profiled":
            python.enable()
        # as `ingest refresh` runs it: silver on one thread, then gold on its threads, interpreted
        took, results, upkeep = _cycle(
            runner,
            spark,
            recorder,
            cycle,
            watch,
            new,
            gold_threads=DEFAULT_GOLD_THREADS,
            gold_interpreted=True,
        )
        python.disable()
        cpu_after = _cpu_seconds(spark)
        warm += [took] if round_ == "warm" else []
    after = _log_versions(root / "warehouse")
    (root / "state.json").write_text(json.dumps(state))
    nodes = []
    for r in results:
        node = Node(r.node.name, r.node.resource_type, float(r.execution_time))
        node.statements = recorder.statements.get(r.node.unique_id, [])
        node.commits = after.get(r.node.name, -1) - before.get(r.node.name, -1)
        nodes.append(node)
    hooks: dict[str, Any] = {k: v for k, v in recorder.statements.items() if k.startswith("(run hooks")}
    hooks["(invocations)"] = recorder.invocations
    hooks["(cpu)"] = {side: cpu_after[side] - cpu_before[side] for side in cpu_after}
    hooks["(warm)"] = warm
    hooks["(python)"] = _python_lines(python) if python_profile else []
    hooks["(merges)"] = _merge_steps(root / "warehouse")
    hooks["(upkeep)"] = upkeep
    spark.stop()
    return took, nodes, hooks


PYTHON_SHOWN = re.compile(r"/(dbt|dbt_common|dbt/adapters|pyspark|ingest|py4j)/")


def _python_lines(python: cProfile.Profile, top: int = 30) -> list[str]:
    """The cycle's Python functions (dbt, its Spark adapter, pyspark, py4j) by cumulative time."""
    stats = pstats.Stats(python)
    rows = []
    for (path, line, name), (_, calls, _, cumulative, _) in stats.stats.items():  # type: ignore[attr-defined]
        if PYTHON_SHOWN.search(path):
            short = path.split("site-packages/")[-1].split("/work/main/")[-1]
            rows.append((cumulative, calls, f"{short}:{line} {name}"))
    rows.sort(reverse=True)
    lines = ["", "Python (cProfile of the cycle): dbt, its adapter, pyspark and py4j by cumulative time", ""]
    lines += ["| function | calls | cumulative s |", "|---|---:|---:|"]
    lines += [f"| `{where}` | {calls} | {cumulative:.2f} |" for cumulative, calls, where in rows[:top]]
    return lines + _own_time_lines(stats, top)


# builtins in which the profiled thread waits: for the JVM's answer, a worker thread, a timer
PYTHON_WAITS = re.compile(r"recv_into|readline|acquire|select|poll|sleep|wait")


def _own_time_lines(stats: pstats.Stats, top: int) -> list[str]:
    """The cycle's Python functions by their own time (any module), its waits apart: where the
    profiled thread's CPU goes between the statements it sends."""
    rows, waits = [], 0.0
    for (path, line, name), (_, calls, own, _, _) in stats.stats.items():  # type: ignore[attr-defined]
        if path == "~" and PYTHON_WAITS.search(name):
            waits += own
            continue
        short = path.split("site-packages/")[-1].split("/work/main/")[-1].split("/lib/python3")[-1]
        rows.append((own, calls, f"{short}:{line} {name}"))
    rows.sort(reverse=True)
    busy = sum(own for own, _, _ in rows)
    return [
        "",
        f"Python by own time (the thread cProfile watched: dbt's main thread, not its worker threads): "
        f"{busy:.2f} s busy, {waits:.2f} s waiting (for the JVM, dbt's workers or a timer)",
        "",
        "| function | calls | own s |",
        "|---|---:|---:|",
        *(f"| `{where}` | {calls} | {own:.3f} |" for own, calls, where in rows[:top]),
    ]


def _report(
    games: int,
    new: int,
    took: float,
    nodes: list[Node],
    hooks: dict[str, Any],
    active: int,
    cycle: str,
    parse: str,
) -> list[str]:
    models = [n for n in nodes if n.kind == "model"]
    tests = [n for n in nodes if n.kind == "test"]
    invocations = hooks.get("(invocations)", [])
    statements = {
        k: v
        for k, v in hooks.items()
        if k not in ("(invocations)", "(cpu)", "(python)", "(merges)", "(upkeep)", "(warm)")
    }
    cpu = hooks.get("(cpu)", {})
    outside = [n.seconds - n.sql_seconds for n in models]
    receiving = f"events for {active} of them" if active and active < games else "events for all"
    lines = [
        f"### {games} games in the seed, {receiving}, {new:,} new events, dbt parsing {parse}: "
        f"warm {cycle} cycle {took:.1f} s",
        "",
        f"- the warm cycles before it, s: {', '.join(f'{t:.1f}' for t in hooks.get('(warm)', []))}",
        f"- nodes: {len(models)} models ({sum(n.seconds for n in models):.1f} s), {len(tests)} tests "
        f"({sum(n.seconds for n in tests):.1f} s), other {len(nodes) - len(models) - len(tests)}",
        f"- median model {statistics.median(n.seconds for n in models):.2f} s; of it in Spark statements "
        f"{statistics.median(n.sql_seconds for n in models):.2f} s, outside them (dbt's Python and the "
        f"Spark jobs of the rows dbt fetches) {statistics.median(outside):.2f} s",
        f"- CPU in the cycle: the Python process (dbt) {cpu.get('python', 0):.1f} s, "
        f"the JVM (Spark) {cpu.get('jvm', 0):.1f} s, against {took:.1f} s of wall time "
        "on 2 cores",
        f"- Delta commits per model: {_counts(n.commits for n in models)}",
        f"- run hooks (lock, bronze source): {sum(s for v in statements.values() for _, s in v):.2f} s in "
        f"{sum(len(v) for v in statements.values())} statements",
        *(
            f"- dbt {args}: {wall:.1f} s, of it {before:.1f} s before its first node and {after:.1f} s "
            "after its last"
            for args, wall, before, after in invocations
        ),
        "",
        "Statements sent per model, summed over the models (count, total s, median s):",
        "",
        "| statement | models of the kind | count | total s | median s |",
        "|---|---|---:|---:|---:|",
    ]
    by_kind: dict[tuple[str, str], list[float]] = defaultdict(list)
    for n in models:
        for kind, seconds in n.statements:
            by_kind[(_family(n.name), kind)].append(seconds)
    for (family, kind), times in sorted(by_kind.items(), key=lambda kv: -sum(kv[1])):
        lines.append(
            f"| {kind} | {family} | {len(times)} | {sum(times):.2f} | {statistics.median(times):.3f} |"
        )
    lines += [
        "",
        "Per model: wall s, in Spark statements s, outside them s, commits, statements in order:",
        "",
    ]
    lines += [
        "| model | wall s | Spark s | outside s | commits | statements (s) |",
        "|---|---:|---:|---:|---:|---|",
    ]
    for n in models:
        steps = ", ".join(f"{k} {s:.2f}" for k, s in n.statements)
        lines.append(
            f"| {n.name} | {n.seconds:.2f} | {n.sql_seconds:.2f} | {n.seconds - n.sql_seconds:.2f} | "
            f"{n.commits} | {steps} |"
        )
    lines += [
        "",
        "Tests: wall s, in Spark statements s, statements in order:",
        "",
        "| test | wall s | Spark s | statements (s) |",
        "|---|---:|---:|---|",
    ]
    lines += [
        f"| {n.name} | {n.seconds:.2f} | {n.sql_seconds:.2f} | "
        + ", ".join(f"{k} {s:.2f}" for k, s in n.statements)
        + " |"
        for n in sorted(tests, key=lambda n: -n.seconds)
    ]
    lines += _upkeep_lines(hooks.get("(upkeep)"))
    return [*lines, *_merge_lines(hooks.get("(merges)", {}), models), *hooks.get("(python)", []), ""]


def _upkeep_lines(done: UpkeepDone | None) -> list[str]:
    """What the refresh's upkeep after the build did (ingest/ops/lakehouse_upkeep.py), in the wall."""
    if done is None:
        return []
    return [
        "",
        f"- upkeep after the build (in the wall time): {done.tables} tables looked at, compacted "
        f"{', '.join(done.compacted) or 'none'} ({done.files_packed} files, {done.compact_seconds:.2f} s), "
        f"vacuumed {done.files_vacuumed} files ({done.vacuum_seconds:.2f} s)",
    ]


def _merge_lines(merges: dict[str, dict[str, int]], models: list[Node]) -> list[str]:
    """Each MERGE of the cycle split into Delta's steps, from the commit it made."""
    merged = [n for n in models if n.commits > 0 and n.name in merges]
    if not merged:
        return []
    lines = [
        "",
        "MERGEs inside Delta (the commit's operationMetrics, s): materializing the source, finding the "
        "touched files (scan), rewriting them, the whole; rows of the source, rows copied unchanged:",
        "",
        "| model | source s | scan s | rewrite s | execution s | source rows | rows copied |",
        "|---|---:|---:|---:|---:|---:|---:|",
    ]
    for n in merged:
        m = merges[n.name]
        seconds = " | ".join(f"{m.get(step, 0) / 1000:.2f}" for step in MERGE_STEPS)
        lines.append(
            f"| {n.name} | {seconds} | {m.get('numSourceRows', 0)} | {m.get('numTargetRowsCopied', 0)} |"
        )
    return lines


def _family(name: str) -> str:
    if name.startswith("silver_") and name != "silver_quarantine":
        return "silver per game"
    if name.startswith("gold_") and not name.startswith("gold_all_games"):
        return "gold per game"
    return "shared"


def _counts(values: Any) -> str:
    tally: dict[int, int] = defaultdict(int)
    for v in values:
        tally[v] += 1
    return ", ".join(f"{k} commit(s): {c} models" for k, c in sorted(tally.items()))


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--games", type=int, nargs="+", default=[5, 60])
    parser.add_argument("--new", type=int, default=6000)
    parser.add_argument("--active", type=int, default=0, help="games that receive events (0: all)")
    parser.add_argument("--cycle", choices=["refresh", "build"], default="refresh")
    parser.add_argument(
        "--parse",
        choices=["once", "each"],
        nargs="+",
        default=["once"],
        help="once: the project parsed once and reused (ingest/ops/warm_dbt.py, as the refresh runs); "
        "each: every dbt invocation loads it",
    )
    parser.add_argument("--label", default="")
    parser.add_argument(
        "--spread-minutes",
        type=float,
        default=SPREAD_MINUTES,
        help="each batch's event times spread over this many minutes before it lands (live: under one)",
    )
    parser.add_argument(
        "--python-profile", action="store_true", help="also list dbt's Python functions by cumulative time"
    )
    parser.add_argument(
        "--warm-cycles",
        type=int,
        default=1,
        help="cycles before the profiled one (the JIT settles after about 8: bench/results/jvm_cpu.md)",
    )
    parser.add_argument("--only", type=int, help=argparse.SUPPRESS)  # one games count, in this process
    parser.add_argument("--out", type=Path, help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.only:
        took, nodes, hooks = profile(
            args.only,
            args.new,
            args.active,
            args.cycle,
            args.parse[0],
            args.python_profile,
            args.spread_minutes,
            args.warm_cycles,
        )
        report = _report(args.only, args.new, took, nodes, hooks, args.active, args.cycle, args.parse[0])
        args.out.write_text("\n".join(report) + "\n")
        return 0
    now = dt.datetime.now(dt.UTC)
    lines = [
        f"## {now:%Y-%m-%d %H:%M} UTC{' — ' + args.label if args.label else ''}",
        "",
        f"- machine: {platform.node() and 'vm'}, {platform.machine()}, {os.cpu_count()} cores, "
        f"Python {platform.python_version()}, load average {' / '.join(f'{x:.1f}' for x in os.getloadavg())}",
        f"- {HISTORY:,} events of history; the profiled build follows {args.warm_cycles} in one Spark "
        f"session (warm); "
        f"each batch's event times spread over the {args.spread_minutes:g} minutes before it lands",
        "",
    ]
    for games, parse in ((g, p) for g in args.games for p in args.parse):
        # one process per lakehouse: a Spark session (and its metastore) per process
        out = WORK / f"report-{games}-{parse}.md"
        WORK.mkdir(parents=True, exist_ok=True)
        command = [
            sys.executable,
            "-m",
            "bench.refresh_profile",
            "--only",
            str(games),
            "--new",
            str(args.new),
            "--active",
            str(args.active),
            "--cycle",
            args.cycle,
            "--parse",
            parse,
            "--spread-minutes",
            str(args.spread_minutes),
            "--warm-cycles",
            str(args.warm_cycles),
            *(["--python-profile"] if args.python_profile else []),
        ]
        subprocess.run([*command, "--out", str(out)], check=True, cwd=PROJECT_DIR)
        lines.append(out.read_text())
    text = "\n".join(lines) + "\n"
    print(text)
    if not RESULTS.exists():
        RESULTS.write_text("# Refresh profile: where a warm cycle's time goes (bench/refresh_profile.py)\n\n")
    with RESULTS.open("a") as results:
        results.write(text)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
