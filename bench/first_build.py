"""``make run``'s dbt part on a fresh lakehouse: ``ingest dbt-build`` (seed, build, docs and the
summary, one JVM) on the bronze a ``make run`` landed, silver and gold not yet made.

    python -m bench.first_build [--rounds 3] [--vs REV | --vs-compiled | --vs-jvm OPTIONS] [--bronze DIR]

Each run gets a fresh lakehouse folder (``GAMELAKE_WAREHOUSE_DIR``: a new Derby metastore, no
silver or gold) with a copy of the saved bronze table, and runs the command as ``make run`` does,
in a process of its own. The saved bronze is the ``warehouse/bronze/game_events`` of this
checkout's last ``make run`` (20,000 events), copied once to .cache/bench-first-build. With
``--vs REV`` the revision REV runs in a scratch worktree with this checkout's venv, in turns with
this checkout (A B A B ...), and the ratio is taken pair by pair. ``--vs-compiled`` pairs this
checkout against itself with the build's statements compiled whatever bronze's size (the command
runs a bronze under 100,000 rows interpreted, ingest/ops/codegen_mode.py). ``--vs-jvm OPTIONS``
pairs this checkout against itself with the driver JVM's options in ``GAMELAKE_SPARK_JVM_OPTIONS``
(ingest/core/spark/session.py). The step times the
command prints (build, docs) and the process's wall time are appended to
bench/results/first_build.md.
"""

from __future__ import annotations

import argparse
import os
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from bench.results_file import append_section
from ingest.core.settings.paths import PROJECT_DIR
from ingest.core.spark.session import JVM_OPTIONS_VARIABLE

SAVED = PROJECT_DIR / ".cache" / "bench-first-build" / "bronze"
RESULTS = PROJECT_DIR / "bench" / "results" / "first_build.md"
HEADING = "# make run's dbt part on a fresh lakehouse\n"
COMPILED_SIDE = "compiled"
STEPS = re.compile(r"dbt: build \([^)]*\) ([\d.]+)s, docs ([\d.]+)s")


def saved_bronze(source: Path) -> Path:
    """The bronze every run starts from, copied once from ``source`` (a make run's bronze)."""
    if SAVED.exists():
        return SAVED
    if not (source / "_delta_log").is_dir():
        raise SystemExit(f"first_build: no bronze table at {source}: run `make run` first, or pass --bronze")
    shutil.copytree(source, SAVED)
    return SAVED


@contextmanager
def checkout(rev: str | None) -> Iterator[Path]:
    """This checkout, or ``rev`` in a scratch worktree that shares this checkout's .cache (jars)."""
    if rev is None:
        yield PROJECT_DIR
        return
    other = Path(tempfile.mkdtemp()) / f"gamelake-{rev}"
    subprocess.run(
        ["git", "-C", str(PROJECT_DIR), "worktree", "add", "-q", "--detach", str(other), rev], check=True
    )
    try:
        (other / ".cache").symlink_to(PROJECT_DIR / ".cache")
        yield other
    finally:
        subprocess.run(
            ["git", "-C", str(PROJECT_DIR), "worktree", "remove", "--force", str(other)], check=True
        )


# `ingest dbt-build` with its choice of mode replaced: compiled whatever bronze's size
COMPILED = (
    "import sys, ingest.ops.dbt_build_command as build; "
    "build.interpreted = lambda rows, *rest: False; sys.exit(build.run())"
)


def one_run(home: Path, bronze: Path, compiled: bool = False, jvm: str = "") -> dict[str, float]:
    """``ingest dbt-build`` of ``home`` on a fresh lakehouse (``compiled``: forced to run its
    statements compiled; ``jvm``: the driver JVM's extra options): its wall time and its printed steps."""
    with tempfile.TemporaryDirectory(prefix="first-build-") as lakehouse:
        shutil.copytree(bronze, Path(lakehouse) / "bronze" / "game_events")
        env = {
            **os.environ,
            "GAMELAKE_HOME": str(home),
            "GAMELAKE_WAREHOUSE_DIR": lakehouse,
            "PYTHONPATH": str(home),
            JVM_OPTIONS_VARIABLE: jvm,
        }
        started = time.monotonic()
        done = subprocess.run(
            [sys.executable, *(["-c", COMPILED] if compiled else ["-m", "ingest.ops.dbt_build_command"])],
            cwd=home,
            env=env,
            capture_output=True,
            text=True,
        )
        wall = time.monotonic() - started
    steps = STEPS.search(done.stdout)
    if done.returncode != 0 or steps is None:
        print(done.stdout[-3000:], done.stderr[-3000:], sep="\n")
        raise SystemExit(f"first_build: `ingest dbt-build` in {home} failed (exit {done.returncode})")
    build, docs = float(steps.group(1)), float(steps.group(2))
    return {"wall": wall, "build": build, "docs": docs, "dbt": build + docs}


def measure(
    rounds: int, bronze: Path, rev: str | None, vs_compiled: bool = False, vs_jvm: str = ""
) -> list[dict[str, dict[str, float]]]:
    measured = []
    with checkout(rev) as other:
        sides = {"this checkout": (PROJECT_DIR, False, "")} | ({rev: (other, False, "")} if rev else {})
        if vs_compiled:
            sides[COMPILED_SIDE] = (PROJECT_DIR, True, "")
        if vs_jvm:
            sides[vs_jvm] = (PROJECT_DIR, False, vs_jvm)
        for round_no in range(1, rounds + 1):
            row = {}
            for name, (home, compiled, jvm) in sides.items():
                row[name] = one_run(home, bronze, compiled, jvm)
                print(
                    f"round {round_no}, {name}: " + ", ".join(f"{k} {v:.1f} s" for k, v in row[name].items())
                )
            measured.append(row)
    return measured


def report(measured: list[dict[str, dict[str, float]]], other: str | None) -> list[str]:
    names = list(measured[0])
    head = "| round | " + " | ".join(f"{n}: build s | docs s | process s" for n in names) + " |"
    lines = ["", head, "|---:|" + "---:|---:|---:|" * len(names)]
    for number, row in enumerate(measured, 1):
        cells = " | ".join(
            f"{row[n]['build']:.1f} | {row[n]['docs']:.1f} | {row[n]['wall']:.1f}" for n in names
        )
        lines.append(f"| {number} | {cells} |")
    lines.append("")
    for name in names:
        dbt = statistics.median(row[name]["dbt"] for row in measured)
        wall = statistics.median(row[name]["wall"] for row in measured)
        lines.append(f"- {name}: median dbt part (build + docs) {dbt:.1f} s, whole process {wall:.1f} s")
    if other:
        ratios = [row["this checkout"]["dbt"] / row[other]["dbt"] for row in measured]
        lines.append(
            f"- this checkout against {other}, dbt part, pair by pair: "
            + ", ".join(f"{r:.2f}" for r in ratios)
        )
        lines.append(f"- median ratio {statistics.median(ratios):.2f}")
    return lines


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--rounds", type=int, default=3)
    sides = parser.add_mutually_exclusive_group()
    sides.add_argument("--vs", metavar="REV", help="a revision to run in turns with this checkout")
    sides.add_argument("--vs-compiled", action="store_true", help="this checkout forced compiled, in turns")
    sides.add_argument("--vs-jvm", metavar="OPTIONS", default="", help="this checkout, driver JVM options")
    parser.add_argument("--bronze", type=Path, default=PROJECT_DIR / "warehouse" / "bronze" / "game_events")
    args = parser.parse_args(argv)
    bronze = saved_bronze(args.bronze)
    measured = measure(args.rounds, bronze, args.vs, args.vs_compiled, args.vs_jvm)
    other = COMPILED_SIDE if args.vs_compiled else (args.vs_jvm or args.vs)
    title = "ingest dbt-build on a fresh lakehouse, make run's 20,000 events" + (
        f", against {other}" if other else ""
    )
    append_section(RESULTS, title, report(measured, other), heading=HEADING)
    return 0


if __name__ == "__main__":
    sys.exit(main())
