"""Helpers for the dbt tests: a private copy of the dbt project, bronze rows, and the expected results.

Expectations are computed here in plain Python over the rows the test wrote, independently
of the dbt models, so a model bug cannot hide behind a shared helper.
"""

from __future__ import annotations

import contextlib
import functools
import html
import http.server
import json
import os
import random
import re
import shutil
import signal
import socketserver
import subprocess
import sys
import threading
from collections import Counter, defaultdict
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import UTC, date, datetime, timedelta
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest

from ingest.core.settings.paths import PROJECT_DIR
from ingest.landing.delta.table_location import TableLocation

DBT_PROJECT_FILES = [
    "dbt_project.yml",
    "selectors.yml",
    "models",
    "macros",
    "data-tests",
    "seeds",
    "profiles",
    "doc/assets",
]
EVENT_TYPES = [
    "session_start",
    "session_end",
    "match_start",
    "match_end",
    "level_up",
    "purchase",
    "achievement",
]
SEED_HEADER = "game_slug,display_name,is_active,studio,genre,platforms,launch_date"
DROP_REASONS = (
    "has_event_id",
    "has_gamer_id",
    "has_event_time",
    "known_event_type",
    "not_from_the_future",
    "not_before_launch",
)
LAUNCH_DATE = date(2024, 1, 1)  # every test game's launch_date in the seed
MAX_FUTURE = timedelta(minutes=1440)


@contextlib.contextmanager
def spark_cluster_running(root: Path) -> Iterator[Any]:
    """The standalone Spark cluster and its Thrift Server, with their state under ``root``, on the
    environment's settings; what was started here is stopped after."""
    from gamelake_dev.localstack import spark_cluster

    with pytest.MonkeyPatch.context() as env:
        env.setenv("GAMELAKE_SPARK_CLUSTER_DIR", str(root))
        with spark_cluster.running(spark_cluster.ClusterConfig.from_env()) as config:
            yield config


@contextlib.contextmanager
def local_spark(warehouse: Path, interpreted: bool = False) -> Iterator[Any]:
    """The project's local Spark session on ``warehouse``, for dbt's session profile, with the
    environment that would point dbt elsewhere removed; stopped after. ``interpreted``: its
    statements run interpreted, as the refresh runs a cycle of a test's few rows
    (ingest/ops/codegen_mode.py), which takes a warm build a quarter less time."""
    from ingest.core.spark.session import local_session
    from ingest.ops.codegen_mode import set_mode

    with pytest.MonkeyPatch.context() as env:
        for name in ("GAMELAKE_BRONZE_PATH", "GAMELAKE_DBT_TARGET", "GAMELAKE_DBT_SCHEMA"):
            env.delenv(name, raising=False)
        env.setenv("DBT_SEND_ANONYMOUS_USAGE_STATS", "false")
        spark = local_session(warehouse)
        if interpreted:
            set_mode(spark, True)
        try:
            yield spark
        finally:
            spark.stop()


def copy_project(target: Path) -> Path:
    """A private copy of the dbt project (tests change the seed; the real one stays untouched)."""
    target.mkdir(parents=True, exist_ok=True)
    for name in DBT_PROJECT_FILES:
        source = PROJECT_DIR / name
        if source.is_dir():
            shutil.copytree(source, target / name, ignore=shutil.ignore_patterns("target", "logs"))
        else:
            shutil.copy2(source, target / name)
    return target


class ProjectLake:
    """A private copy of the dbt project on a private warehouse's Spark session, and the bronze
    rows written so far."""

    def __init__(self, root: Path, spark: Any) -> None:
        self.project = copy_project(root / "project")
        self.spark = spark
        self.bronze_path = root / "warehouse" / "bronze" / "game_events"
        self.rows: list[dict[str, Any]] = []

    def land(self, rows: list[dict[str, Any]], schema: str) -> None:
        append_bronze(self.spark, self.bronze_path, rows, schema)
        self.rows += rows

    def invoke(self, *args: str, callbacks: tuple[Any, ...] = ()) -> tuple[Any, list[str]]:
        """dbt ``args`` on the local target: its result, and each failed node with its message."""
        from dbt.cli.main import dbtRunner

        result = dbtRunner(callbacks=list(callbacks)).invoke(
            [
                *args,
                "--project-dir",
                str(self.project),
                "--profiles-dir",
                str(self.project / "profiles"),
                "--target",
                "local",
            ]
        )
        failed = [
            f"{getattr(r, 'unique_id', '?')}: {r.status} {r.message}"
            for r in getattr(result.result, "results", []) or []
            if str(r.status) in ("error", "fail")
        ]
        return result, failed


@dataclass(frozen=True)
class RefreshPlace:
    """Where a test's `ingest refresh` process runs: its project, its warehouse (on a local disk,
    the Derby metastore's too), bronze and dbt's tables (local, or on S3), and its environment."""

    project: Path
    warehouse: Path
    bronze: TableLocation
    tables: TableLocation  # dbt's: <schema>.db/<table> under it
    env: dict[str, str]

    def append_to_bronze(self, rows: pa.Table) -> None:
        from deltalake import write_deltalake

        write_deltalake(
            self.bronze.uri, rows, mode="append", storage_options=self.bronze.storage_options or None
        )

    def table(self, name: str) -> TableLocation:
        """dbt's table ``schema.name``."""
        return self.tables.child(name.replace(".", ".db/", 1))


@contextlib.contextmanager
def refresh_running(place: RefreshPlace, log_path: Path, *args: str) -> Iterator[subprocess.Popen[bytes]]:
    """``ingest refresh --continuous`` with ``args`` on ``place``, its output in ``log_path``;
    stopped with SIGTERM after the block, as a service manager stops it (its ``returncode`` then)."""
    with log_path.open("w") as log:
        refresh = subprocess.Popen(
            [sys.executable, "-m", "ingest.cli", "refresh", "--continuous", *args],
            cwd=place.project,
            env=place.env,
            stdout=log,
            stderr=subprocess.STDOUT,
        )
        try:
            yield refresh
        finally:
            refresh.send_signal(signal.SIGTERM)
            refresh.wait(240)


def refresh_place(
    root: Path, games: dict[str, bool], bronze_schema: pa.Schema, lakehouse: str | None = None
) -> RefreshPlace:
    """A private project with ``games``' models generated, and an empty bronze table (written as
    the ingest writes it) in a warehouse of its own, under ``root``, or on S3 under ``lakehouse``
    (``s3://bucket/prefix``, reached with this process's AWS variables)."""
    from ingest.games import model_files
    from ingest.landing.delta.bronze_writer import CHANGE_DATA_FEED
    from ingest.landing.delta.tables import ensure_table

    project = copy_project(root / "project")
    write_seed(project, games)
    model_files.sync(project)
    (project / ".cache").symlink_to(PROJECT_DIR / ".cache")  # the Delta jars
    warehouse = root / "warehouse"
    env = {**os.environ, "GAMELAKE_HOME": str(project), "GAMELAKE_WAREHOUSE_DIR": str(warehouse)}
    env.pop("GAMELAKE_BRONZE_PATH", None)
    if lakehouse is None:
        env.pop("GAMELAKE_INGEST_WAREHOUSE_URI", None)
        bronze, tables = (
            TableLocation.of(warehouse / "bronze" / "game_events"),
            TableLocation.of(warehouse / "spark"),
        )
    else:
        env["GAMELAKE_INGEST_WAREHOUSE_URI"] = lakehouse
        bronze = TableLocation.of(f"{lakehouse}/bronze/game_events")
        tables = TableLocation.of(f"{lakehouse}/spark-warehouse")
    ensure_table(bronze, bronze_schema, ["event_date"], "game_events", CHANGE_DATA_FEED)
    return RefreshPlace(project, warehouse, bronze, tables, env)


def write_seed(project: Path, games: dict[str, bool]) -> None:
    lines = [SEED_HEADER]
    lines += [
        f"{slug},{slug.replace('_', ' ').title()},{str(active).lower()},Test Studio,arcade,pc,2024-01-01"
        for slug, active in games.items()
    ]
    (project / "seeds" / "games.csv").write_text("\n".join(lines) + "\n")


@dataclass
class BronzeWriter:
    """Writes bronze rows shaped like the ingest service's, schema version by version."""

    rng: random.Random
    offset: int = 0

    def event(
        self, game: str, version: int, ingested_at: datetime, gamers: int = 12, **overrides: Any
    ) -> dict[str, Any]:
        """One event of ``game`` in schema ``version``, from one of the first ``gamers`` gamers."""
        self.offset += 1
        event_at = ingested_at - timedelta(seconds=self.rng.randint(1, 3600))
        row: dict[str, Any] = {
            "event_id": f"ev-{self.offset:06d}",
            "game_name": game,
            "gamer_id": f"gamer-{self.rng.randint(1, gamers):02d}",
            "event_type": self.rng.choice(EVENT_TYPES),
            "event_timestamp": event_at,
            "device_id": f"dev-{self.rng.randint(1, 5)}",
        }
        if version >= 2:
            row |= {
                "session_id": f"s-{self.rng.randint(1, 40)}",
                "score": self.rng.randint(0, 5000),
                "level": self.rng.randint(1, 60),
            }
        if version >= 3:
            row |= {"duration_ms": self.rng.randint(1000, 900000), "platform": "pc", "region": "eu"}
        if version >= 4:
            row |= {
                "client_build": "4.1.0",
                "is_ranked": self.rng.random() < 0.5,
                "network_latency_ms": self.rng.uniform(5, 200),
            }
        row |= {
            "_kafka_topic": "game-events",
            "_kafka_partition": self.offset % 3,
            "_kafka_offset": self.offset,
            "_kafka_timestamp": ingested_at,
            "_kafka_key": row["gamer_id"],
            "_schema_id": version,
            "_ingested_at": ingested_at,
        }
        row |= overrides
        row["event_date"] = row["event_timestamp"].date() if row["event_timestamp"] else ingested_at.date()
        return row

    def retry(self, original: dict[str, Any], ingested_at: datetime) -> dict[str, Any]:
        """The same event landed again by a producer retry: new Kafka coordinates, later ingestion."""
        self.offset += 1
        return original | {
            "_kafka_partition": self.offset % 3,
            "_kafka_offset": self.offset,
            "_kafka_timestamp": ingested_at,
            "_ingested_at": ingested_at,
        }


def append_bronze(spark: Any, path: Path, rows: list[dict[str, Any]], schema: str) -> None:
    """Append rows to the bronze Delta table with schema evolution, as the ingest service does.

    Created, as the ingest creates it, with the change data feed on: silver reads it by version.
    """
    if not (path / "_delta_log").is_dir():
        spark.sql(
            f"create table delta.`{path}` ({schema}) using delta partitioned by (event_date) "
            "tblproperties (delta.enableChangeDataFeed = true)"
        )
    frame = spark.createDataFrame(rows, schema=schema)
    (
        frame.write.format("delta")
        .mode("append")
        .option("mergeSchema", "true")
        .partitionBy("event_date")
        .save(str(path))
    )


V1 = (
    "event_id string, game_name string, gamer_id string, event_type string, event_timestamp timestamp, "
    "device_id string"
)
V2 = V1 + ", session_id string, score bigint, level int"
V3 = V2 + ", duration_ms bigint, platform string, region string"
V4 = V3 + ", client_build string, is_ranked boolean, network_latency_ms double"
LINEAGE = (
    "_kafka_topic string, _kafka_partition int, _kafka_offset bigint, _kafka_timestamp timestamp, "
    "_kafka_key string, _schema_id int, _ingested_at timestamp, event_date date"
)


def schema_for(version: int, extra: str = "") -> str:
    columns = {1: V1, 2: V2, 3: V3, 4: V4}[version] + ", " + LINEAGE
    return columns + (", " + extra if extra else "")


def failed_drop_rules(row: dict[str, Any], known_game: bool = True) -> list[str]:
    failed = []
    if not row.get("event_id"):
        failed.append("has_event_id")
    if not row.get("gamer_id"):
        failed.append("has_gamer_id")
    if row.get("event_timestamp") is None:
        failed.append("has_event_time")
    if row.get("event_type") not in EVENT_TYPES:
        failed.append("known_event_type")
    if row.get("event_timestamp") is not None and row["event_timestamp"] > row["_ingested_at"] + MAX_FUTURE:
        failed.append("not_from_the_future")
    if known_game and row.get("event_timestamp") is not None and row["event_timestamp"].date() < LAUNCH_DATE:
        failed.append("not_before_launch")
    return failed


def expected_silver(rows: list[dict[str, Any]], game: str) -> dict[str, dict[str, Any]]:
    """event_id -> the first landed valid copy, for one game."""
    kept: dict[str, dict[str, Any]] = {}
    order = lambda r: (r["_ingested_at"], r["_kafka_partition"], r["_kafka_offset"])  # noqa: E731
    for row in rows:
        if row["game_name"] != game or failed_drop_rules(row):
            continue
        current = kept.get(row["event_id"])
        if current is None or order(row) < order(current):
            kept[row["event_id"]] = row
    return kept


# player_agg's columns that are not counts: none until the player's first event (or purchase)
PLAYER_EXTREMES = ("best_score", "max_level", "first_event_at", "last_event_at", "last_purchase_at")


def expected_player_agg(silver: dict[str, dict[str, Any]]) -> dict[str, dict[str, Any]]:
    players: dict[str, dict[str, Any]] = {}
    for row in silver.values():
        p = players.setdefault(
            row["gamer_id"],
            defaultdict(int, dict.fromkeys(PLAYER_EXTREMES)),
        )
        p["event_count"] += 1
        p["session_count"] += row["event_type"] == "session_start"
        p["match_count"] += row["event_type"] == "match_start"
        p["purchase_count"] += row["event_type"] == "purchase"
        p["achievement_count"] += row["event_type"] == "achievement"
        p["level_up_count"] += row["event_type"] == "level_up"
        if row["event_type"] == "session_end":
            p["total_session_ms"] += row.get("duration_ms") or 0
        for key, column in (("best_score", "score"), ("max_level", "level")):
            if row.get(column) is not None:
                p[key] = row[column] if p[key] is None else max(p[key], row[column])
        at = row["event_timestamp"]
        p["first_event_at"] = at if p["first_event_at"] is None else min(p["first_event_at"], at)
        p["last_event_at"] = at if p["last_event_at"] is None else max(p["last_event_at"], at)
        if row["event_type"] == "purchase":
            last = p["last_purchase_at"]
            p["last_purchase_at"] = at if last is None else max(last, at)
    return {gamer: dict(p) for gamer, p in players.items()}


def expected_daily_active(silver: dict[str, dict[str, Any]]) -> dict[Any, dict[str, int]]:
    days: dict[Any, dict[str, Any]] = {}
    for row in silver.values():
        d = days.setdefault(row["event_date"], {"players": set(), "payers": set(), "events": Counter()})
        d["players"].add(row["gamer_id"])
        if row["event_type"] == "purchase":
            d["payers"].add(row["gamer_id"])
        d["events"][row["event_type"]] += 1
    return {
        day: {
            "active_players": len(d["players"]),
            "paying_players": len(d["payers"]),
            "session_count": d["events"]["session_start"],
            "match_count": d["events"]["match_start"],
            "event_count": d["events"].total(),
        }
        for day, d in days.items()
    }


def expected_quarantine(rows: list[dict[str, Any]], known_games: set[str]) -> dict[str, list[str]]:
    """quarantine_id (topic:partition:offset) -> reasons."""
    out = {}
    for row in rows:
        known = row["game_name"] in known_games
        reasons = ([] if known else ["unknown_game"]) + failed_drop_rules(row, known)
        if reasons:
            out[f"{row['_kafka_topic']}:{row['_kafka_partition']}:{row['_kafka_offset']}"] = reasons
    return out


CHROMIUM_INSTALL = [
    "sh",
    "-c",
    "apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium",
]
CHROMIUM_FLAGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]

# Loads a page of the docs site (the route after `#!/` in the query string) in a same-origin
# iframe, waits until its cytoscape lineage graph has nodes, and writes the graph's visible
# nodes and edges and the page's text into this page, which Chromium then dumps.
LINEAGE_PROBE = """<!doctype html>
<html><body><pre id="lineage">pending</pre>
<iframe id="docs" style="width:1600px;height:1000px"></iframe>
<script>
const route = location.search.slice(1);  // already URL-encoded
document.getElementById("docs").src = "index.html#!/" + route;
function probe() {
  const doc = document.getElementById("docs").contentDocument;
  const host = doc && Array.from(doc.querySelectorAll("*")).find((el) => el._cyreg && el._cyreg.cy);
  if (!host || host._cyreg.cy.nodes(":visible").length === 0) { setTimeout(probe, 200); return; }
  const cy = host._cyreg.cy;
  document.getElementById("lineage").textContent = JSON.stringify({
    nodes: cy.nodes(":visible").map((n) => n.id()),
    edges: cy.edges(":visible").map((e) => [e.source().id(), e.target().id()]),
  });
}
probe();
</script></body></html>
"""


class _QuietHandler(http.server.SimpleHTTPRequestHandler):
    def log_message(self, format: str, *args: Any) -> None:
        pass


def ensure_chromium() -> str:
    """The chromium binary; installs Debian's chromium package when missing (as .ci/run does)."""
    found = shutil.which("chromium")
    if found is None:
        subprocess.run(CHROMIUM_INSTALL, check=True, timeout=900)
        found = shutil.which("chromium")
    assert found, "chromium is not installed and could not be installed with apt-get"
    return found


@dataclass
class DocsBrowser:
    """The generated docs site served on loopback and opened in headless Chromium."""

    site: Path
    profile_dir: Path
    base_url: str = ""

    def _chromium(self, url: str, *flags: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [ensure_chromium(), *CHROMIUM_FLAGS, f"--user-data-dir={self.profile_dir}", *flags, url],
            capture_output=True,
            text=True,
            timeout=180,
        )

    def lineage(self, route: str = "overview?g_v=1") -> dict[str, list[Any]]:
        """The visible nodes and edges of the lineage graph shown at ``route``."""
        (self.site / "lineage_probe.html").write_text(LINEAGE_PROBE)
        url = f"{self.base_url}/lineage_probe.html?{route}"
        proc = self._chromium(url, "--virtual-time-budget=60000", "--dump-dom")
        match = re.search(r'<pre id="lineage">(.*?)</pre>', proc.stdout, re.S)
        assert match and match.group(1) != "pending", f"lineage graph did not render: {proc.stderr[-2000:]}"
        return json.loads(html.unescape(match.group(1)))

    def page_text(self, route: str) -> str:
        """The rendered DOM of the page at ``route``."""
        proc = self._chromium(
            f"{self.base_url}/index.html#!/{route}", "--virtual-time-budget=30000", "--dump-dom"
        )
        assert proc.returncode == 0, proc.stderr[-2000:]
        return proc.stdout

    def screenshot(self, route: str, path: Path) -> Path:
        path.parent.mkdir(parents=True, exist_ok=True)
        proc = self._chromium(
            f"{self.base_url}/index.html#!/{route}",
            "--virtual-time-budget=30000",
            "--window-size=1400,900",
            "--hide-scrollbars",
            f"--screenshot={path}",
        )
        assert path.is_file() and path.stat().st_size > 10_000, (
            f"no screenshot of {route}: {proc.stderr[-2000:]}"
        )
        return path


@contextlib.contextmanager
def docs_browser(site: Path, profile_dir: Path) -> Iterator[DocsBrowser]:
    handler = functools.partial(_QuietHandler, directory=str(site))
    with socketserver.TCPServer(("127.0.0.1", 0), handler) as server:
        threading.Thread(target=server.serve_forever, daemon=True).start()
        try:
            yield DocsBrowser(site, profile_dir, f"http://127.0.0.1:{server.server_address[1]}")
        finally:
            server.shutdown()


ARROW_TYPES = {
    "string": pa.string(),
    "bigint": pa.int64(),
    "int": pa.int32(),
    "boolean": pa.bool_(),
    "double": pa.float64(),
    "date": pa.date32(),
    "timestamp": pa.timestamp("us", tz="UTC"),
}


def arrow_bronze(rows: list[dict[str, Any]], version: int) -> pa.Table:
    """Rows as an Arrow table with bronze's types, for writing with delta-rs as the ingest service does."""
    fields = [column.strip().split(" ") for column in schema_for(version).split(",")]
    schema = pa.schema([(name, ARROW_TYPES[kind]) for name, kind in fields])
    utc = {name for name, kind in fields if kind == "timestamp"}
    data = [{k: (v.replace(tzinfo=UTC) if k in utc and v else v) for k, v in row.items()} for row in rows]
    return pa.Table.from_pylist(data, schema=schema)
