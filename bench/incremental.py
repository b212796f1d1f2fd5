"""What an incremental ``dbt build`` costs as history and the number of games grow.

    python -m bench.incremental prepare --dir D --history 5000000 [--games 5]
    python -m bench.incremental step --dir D [--new 20000]
    python -m bench.incremental compare --a D1 --b D2 --label "..." [--rounds 3] [--new 20000]

``prepare`` makes a private lakehouse in D: a copy of the dbt project with a seed of
``--games`` active games, a bronze table shaped like the ingest's (change data feed on) holding
``--history`` events spread over 60 days, and a first full ``dbt build``. ``step`` is one cold
incremental build from the command line, as an analytics engineer runs it: land ``--new``
events in bronze (1% of them producer retries), then ``dbt build``. It prints the build's wall
time, the time of every model, and, from Spark's SQL metrics, how many files each scan read
against the files its table holds; the step's figures are appended to D/steps.jsonl.

``compare`` runs ``step`` on A and B in turn (A B A B ..., each a new process, so each build is
cold), and appends the medians and the ratio A/B per round to bench/results/incremental.md
with the machine and date.

Bronze rows are written by Spark, not through Kafka: the benchmark is about what happens after
bronze, and a 5,000,000-event history through the ingest would only add minutes to prepare.
"""

from __future__ import annotations

import argparse
import json
import shutil
import statistics
import sys
import time
import urllib.request
from pathlib import Path
from typing import Any

from ingest.core.settings.paths import PROJECT_DIR

PROJECT_FILES = ["dbt_project.yml", "selectors.yml", "models", "macros", "data-tests", "seeds", "profiles"]
EVENT_TYPES = [
    "session_start",
    "session_end",
    "match_start",
    "match_end",
    "level_up",
    "purchase",
    "achievement",
]
STOCK_GAMES = ["space_raiders", "kart_legends", "dungeon_depths", "puzzle_pop", "retro_arena"]
HISTORY_DAYS = 60
UI_PORT = 4057


def _games(count: int) -> list[str]:
    return STOCK_GAMES[:count] if count <= len(STOCK_GAMES) else [f"game_{i:03d}" for i in range(count)]


def _session(root: Path) -> Any:
    from pyspark.sql import SparkSession

    from ingest.core.spark.session import spark_settings

    builder = SparkSession.builder.enableHiveSupport()
    settings = spark_settings(root / "warehouse") | {
        "spark.ui.enabled": "true",
        "spark.ui.port": str(UI_PORT),
    }
    for key, value in settings.items():
        builder = builder.config(key, value)
    session = builder.getOrCreate()
    session.sparkContext.setLogLevel("ERROR")
    return session


def _bronze_rows(spark: Any, start: int, count: int, games: list[str], days: float) -> Any:
    """``count`` events numbered from ``start``, event times spread over the last ``days`` days."""
    return spark.sql(bronze_rows_sql(start, count, games, days))


def bronze_rows_sql(start: int, count: int, games: list[str], days: float) -> str:
    """The query of ``_bronze_rows``, for a Spark reached over Thrift."""
    game_list = ", ".join(f"'{g}'" for g in games)
    types = ", ".join(f"'{t}'" for t in EVENT_TYPES)
    spread = max(int(days * 86400), 1)
    return f"""
        select *, to_date(event_timestamp) as event_date from (
        select
            concat('ev-', id) as event_id,
            element_at(array({game_list}), cast(id % {len(games)} as int) + 1) as game_name,
            concat('gamer-', (id * 7919) % 50000) as gamer_id,
            element_at(array({types}), cast(id % 7 as int) + 1) as event_type,
            current_timestamp() - make_dt_interval(0, 0, 0, {spread} - ((id - {start}) * {spread} / {count}))
                as event_timestamp,
            concat('dev-', id % 97) as device_id,
            concat('s-', id % 5000) as session_id,
            (id * 31) % 5000 as score,
            cast(id % 60 + 1 as int) as level,
            (id * 17) % 900000 as duration_ms,
            'pc' as platform,
            'eu' as region,
            '4.1.0' as client_build,
            id % 2 = 0 as is_ranked,
            cast(id % 200 as double) as network_latency_ms,
            'game-events' as _kafka_topic,
            cast(id % 6 as int) as _kafka_partition,
            id as _kafka_offset,
            current_timestamp() as _kafka_timestamp,
            concat('gamer-', (id * 7919) % 50000) as _kafka_key,
            4 as _schema_id,
            current_timestamp() as _ingested_at
        from range({start}, {start + count}, 1, 4))
        """


def _land(spark: Any, bronze: Path | str, frame: Any) -> None:
    frame.write.format("delta").mode("append").partitionBy("event_date").save(str(bronze))


def run_dbt(project: Path, *args: str, callbacks: tuple[Any, ...] = ()) -> tuple[float, Any]:
    """``dbt <args>`` on ``project``'s local target in this process: wall seconds and dbt's result."""
    from dbt.cli.main import dbtRunner

    started = time.monotonic()
    result = dbtRunner(callbacks=list(callbacks)).invoke(
        [
            *args,
            "--project-dir",
            str(project),
            "--profiles-dir",
            str(project / "profiles"),
            "--target",
            "local",
        ]
    )
    took = time.monotonic() - started
    if not result.success:
        raise SystemExit(f"dbt {' '.join(args)} failed: {result.exception}")
    return took, result.result


def _dbt(root: Path, *args: str) -> tuple[float, list[dict[str, Any]]]:
    took, outcome = run_dbt(root / "project", *args)
    nodes = [
        {"node": r.node.name, "type": r.node.resource_type, "seconds": round(r.execution_time, 2)}
        for r in (getattr(outcome, "results", None) or [])
    ]
    return took, nodes


def _copy_project(project: Path, slugs: list[str]) -> None:
    """The repo's dbt project with a seed of ``slugs``, its per-game files generated for them."""
    from ingest.games.model_files import sync

    for name in PROJECT_FILES:
        source, target = PROJECT_DIR / name, project / name
        if source.is_dir():
            shutil.rmtree(target, ignore_errors=True)
            shutil.copytree(source, target, ignore=shutil.ignore_patterns("target", "logs"))
        else:
            shutil.copy2(source, target)
    seed = ["game_slug,display_name,is_active,studio,genre,platforms,launch_date"]
    seed += [f"{s},{s.replace('_', ' ').title()},true,Bench Studio,arcade,pc,2020-01-01" for s in slugs]
    (project / "seeds" / "games.csv").write_text("\n".join(seed) + "\n")
    sync(project)


def prepare(root: Path, history: int, games: int) -> None:
    if root.exists():
        shutil.rmtree(root)
    project = root / "project"
    project.mkdir(parents=True)
    slugs = _games(games)
    _copy_project(project, slugs)
    import os

    os.environ["GAMELAKE_BRONZE_PATH"] = str(root / "warehouse" / "bronze" / "game_events")
    spark = _session(root)
    bronze = root / "warehouse" / "bronze" / "game_events"
    spark.sql(
        f"create table delta.`{bronze}` ({_bronze_rows(spark, 0, 1, slugs, 1).schema.toDDL()}) using delta "
        "partitioned by (event_date) tblproperties (delta.enableChangeDataFeed = true)"
    )
    started = time.monotonic()
    _land(spark, bronze, _bronze_rows(spark, 0, history, slugs, HISTORY_DAYS))
    print(f"prepare: {history} events of {games} games landed in {time.monotonic() - started:.0f} s")
    _dbt(root, "seed")
    took, _ = _dbt(root, "build")
    print(f"prepare: first build {took:.0f} s")
    (root / "state.json").write_text(json.dumps({"next_id": history, "games": slugs, "history": history}))


def _files_read(since_execution: int) -> dict[str, list[int]]:
    """table -> [files read, scans] over the SQL executions after ``since_execution``."""
    base = f"http://127.0.0.1:{UI_PORT}/api/v1/applications"
    with urllib.request.urlopen(base) as response:
        app = json.load(response)[0]["id"]
    with urllib.request.urlopen(f"{base}/{app}/sql?details=true&length=100000") as response:
        executions = json.load(response)
    read: dict[str, list[int]] = {}
    for execution in executions:
        if execution["id"] <= since_execution:
            continue
        for node in execution.get("nodes", []):
            if not node["nodeName"].startswith("Scan"):
                continue
            metrics = {m["name"]: m["value"] for m in node.get("metrics", [])}
            files = metrics.get("number of files read")
            if files is None:
                continue
            table = node["nodeName"].split(" ")[-1]
            entry = read.setdefault(table, [0, 0])
            entry[0] += int(str(files).replace(",", ""))
            entry[1] += 1
    return read


def _last_execution() -> int:
    base = f"http://127.0.0.1:{UI_PORT}/api/v1/applications"
    with urllib.request.urlopen(base) as response:
        app = json.load(response)[0]["id"]
    with urllib.request.urlopen(f"{base}/{app}/sql?length=100000") as response:
        executions = json.load(response)
    return max((e["id"] for e in executions), default=-1)


def _table_files(spark: Any, table: str) -> int:
    try:
        return int(spark.sql(f"describe detail {table}").first()["numFiles"])
    except Exception:  # a scan of something that is not a table (a temp view)
        return -1


def step(root: Path, new: int) -> dict[str, Any]:
    import os

    state = json.loads((root / "state.json").read_text())
    _copy_project(root / "project", state["games"])  # the code as it is now, not as at prepare
    os.environ["GAMELAKE_BRONZE_PATH"] = str(root / "warehouse" / "bronze" / "game_events")
    started = time.monotonic()
    spark = _session(root)
    bronze = root / "warehouse" / "bronze" / "game_events"
    fresh = _bronze_rows(spark, state["next_id"], new, state["games"], 0.01)
    retries = fresh.limit(new // 100).selectExpr(
        "* except (_kafka_offset)", f"_kafka_offset + {10**12} as _kafka_offset"
    )
    _land(spark, bronze, fresh.unionByName(retries))
    landed = time.monotonic() - started
    before = _last_execution()
    build, nodes = _dbt(root, "build")
    files = {table: [*reads, _table_files(spark, table)] for table, reads in _files_read(before).items()}
    state["next_id"] += new
    (root / "state.json").write_text(json.dumps(state))
    models = [n for n in nodes if n["type"] == "model"]
    figures = {
        "history": state["history"],
        "games": len(state["games"]),
        "new": new,
        "land_s": round(landed, 1),
        "build_s": round(build, 1),
        "nodes": len(nodes),
        "models": models,
        "median_silver_s": _median(models, "silver_"),
        "median_gold_s": _median(models, "gold_"),
        "slice_s": sum(n["seconds"] for n in models if n["node"] == "stg_bronze__new_events"),
        "files_read": files,
    }
    with (root / "steps.jsonl").open("a") as out:
        out.write(json.dumps(figures) + "\n")
    print(json.dumps({k: v for k, v in figures.items() if k != "models"}, indent=1))
    return figures


def _median(models: list[dict[str, Any]], prefix: str) -> float:
    times = [
        m["seconds"] for m in models if m["node"].startswith(prefix) and m["node"] != "silver_quarantine"
    ]
    return round(statistics.median(times), 2) if times else 0.0


RESULTS = PROJECT_DIR / "bench" / "results" / "incremental.md"


def compare(a: Path, b: Path, label: str, rounds: int, new: int) -> None:
    import datetime as dt
    import os
    import platform
    import subprocess

    walls: dict[Path, list[float]] = {a: [], b: []}
    for _ in range(rounds):
        for root in (a, b):
            started = time.monotonic()
            command = [
                sys.executable,
                "-m",
                "bench.incremental",
                "step",
                "--dir",
                str(root),
                "--new",
                str(new),
            ]
            subprocess.run(command, check=True, cwd=PROJECT_DIR, stdout=subprocess.DEVNULL)
            walls[root].append(time.monotonic() - started)
    steps = {
        root: [json.loads(line) for line in (root / "steps.jsonl").read_text().splitlines()][-rounds:]
        for root in (a, b)
    }
    lines = [
        f"\n## {label}",
        f"{dt.datetime.now(dt.UTC):%Y-%m-%d %H:%M} UTC, {platform.node()}, {os.cpu_count()} cores, "
        f"Python {platform.python_version()}; {rounds} rounds A B A B, {new} new events per build "
        "(1% producer retries), each build a new process (cold JVM).",
        "",
        "| | A | B | A/B |",
        "|---|---|---|---|",
    ]
    rows = [
        ("history (events)", lambda r: r[0]["history"]),
        ("games", lambda r: r[0]["games"]),
        ("dbt nodes", lambda r: r[0]["nodes"]),
        ("whole command, median s", lambda r: round(statistics.median(walls[r[1]]), 1)),
        ("dbt build, median s", lambda r: statistics.median(x["build_s"] for x in steps[r[1]])),
        ("median silver model s", lambda r: statistics.median(x["median_silver_s"] for x in steps[r[1]])),
        ("median gold model s", lambda r: statistics.median(x["median_gold_s"] for x in steps[r[1]])),
        ("slice (bronze read once) s", lambda r: statistics.median(x["slice_s"] for x in steps[r[1]])),
    ]
    for name, value in rows:
        va, vb = value((steps[a][0], a)), value((steps[b][0], b))
        ratio = f"{va / vb:.2f}" if isinstance(va, (int, float)) and vb else ""
        lines.append(f"| {name} | {va} | {vb} | {ratio} |")
    per_round = [wa / wb for wa, wb in zip(walls[a], walls[b], strict=True)]
    lines.append(f"\nWhole-command ratio A/B per round: {', '.join(f'{r:.2f}' for r in per_round)}.")
    for root, tag in ((a, "A"), (b, "B")):
        read = steps[root][-1]["files_read"]
        shown = ", ".join(f"{t}: {v[0]} of {v[2]} files in {v[1]} scans" for t, v in sorted(read.items()))
        lines.append(f"\nFiles read in {tag}'s last build (files read of files in the table): {shown}.")
        models = sorted(steps[root][-1]["models"], key=lambda m: -m["seconds"])[:8]
        lines.append(
            f"Slowest models in {tag}'s last build: "
            + ", ".join(f"{m['node']} {m['seconds']} s" for m in models)
            + "."
        )
    RESULTS.parent.mkdir(parents=True, exist_ok=True)
    if not RESULTS.exists():
        RESULTS.write_text(
            "# Incremental dbt build: growth with history and games\n\n"
            "Recorded by `make bench-incremental`.\n"
        )
    with RESULTS.open("a") as out:
        out.write("\n".join(lines) + "\n")
    print("\n".join(lines))


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.incremental", description=__doc__.split("\n")[0])
    commands = parser.add_subparsers(dest="command", required=True)
    p = commands.add_parser("prepare", help="a private lakehouse with history and a first build")
    p.add_argument("--dir", type=Path, required=True)
    p.add_argument("--history", type=int, required=True)
    p.add_argument("--games", type=int, default=5)
    s = commands.add_parser("step", help="land new events, then one cold incremental dbt build")
    s.add_argument("--dir", type=Path, required=True)
    s.add_argument("--new", type=int, default=20000)
    c = commands.add_parser("compare", help="steps on A and B in turn, medians and ratios to the results")
    c.add_argument("--a", type=Path, required=True)
    c.add_argument("--b", type=Path, required=True)
    c.add_argument("--label", required=True)
    c.add_argument("--rounds", type=int, default=3)
    c.add_argument("--new", type=int, default=20000)
    args = parser.parse_args(argv)
    for name in ("dir", "a", "b"):  # Spark takes `delta.`<path>`` as a path only when absolute
        if getattr(args, name, None) is not None:
            setattr(args, name, getattr(args, name).resolve())
    if args.command == "prepare":
        prepare(args.dir, args.history, args.games)
    elif args.command == "step":
        step(args.dir, args.new)
    else:
        compare(args.a, args.b, args.label, args.rounds, args.new)
    return 0


if __name__ == "__main__":
    sys.exit(main())
