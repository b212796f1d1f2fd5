"""``ingest refresh --continuous`` on real Spark + Delta: it builds on new bronze versions, reads a
backlog in bounded steps, keeps one warm session, runs a small cycle interpreted and a larger
one's gold step interpreted, reports how far silver and gold trail bronze, and stops cleanly on
SIGTERM. Its upkeep compacts, vacuums and checkpoints what each build wrote, and nothing a reader
relies on moves (tests/integration/upkeep_checks.py; on S3, test_refresh_upkeep.py).

Bronze rows are written with delta-rs, as the ingest writes them, while the refresh process runs
its own Spark: the two never share a JVM or a metastore.
"""

from __future__ import annotations

import html
import itertools
import random
import re
import urllib.request
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest
from deltalake import DeltaTable, write_deltalake
from gamelake_dev.screenshot import rendered_dom, screenshot

from ingest.core.settings.paths import PROJECT_DIR
from ingest.ops.refresh_command import DASHBOARD_PANELS
from ingest.ops.refresh_selection import SILVER_CHECK
from tests.integration import dbt_support as support
from tests.integration.ingest_support import wait_until
from tests.integration.upkeep_checks import UPKEEP_FLAGS, assert_upkept

pytestmark = [pytest.mark.integration, pytest.mark.slow]

METRICS_PORT = 9391
_FLAGS = ("--min-interval", "1", "--metrics-port", str(METRICS_PORT))
GAMES = {"alpha": True, "beta": True, "quiet": True}
BUSY = ["alpha", "beta"]  # quiet gets events in the first batches only
_INTERPRETED_BELOW = 15  # rows: a cycle of fewer runs interpreted


def _bronze_batch(
    writer: support.BronzeWriter, count: int, games: list[str], written: list[dict[str, Any]]
) -> pa.Table:
    """``count`` events of ``games`` in turn, also added to ``written``."""
    at = datetime.now(UTC).replace(tzinfo=None, microsecond=0) - timedelta(minutes=1)
    rows = [writer.event(games[i % len(games)], 4, at) for i in range(count)]
    written += rows
    return pa.Table.from_pylist(rows, schema=_SCHEMA)


_SCHEMA = pa.schema(
    [
        ("event_id", pa.string()),
        ("game_name", pa.string()),
        ("gamer_id", pa.string()),
        ("event_type", pa.string()),
        ("event_timestamp", pa.timestamp("us", "UTC")),
        ("device_id", pa.string()),
        ("session_id", pa.string()),
        ("score", pa.int64()),
        ("level", pa.int32()),
        ("duration_ms", pa.int64()),
        ("platform", pa.string()),
        ("region", pa.string()),
        ("client_build", pa.string()),
        ("is_ranked", pa.bool_()),
        ("network_latency_ms", pa.float64()),
        ("_kafka_topic", pa.string()),
        ("_kafka_partition", pa.int32()),
        ("_kafka_offset", pa.int64()),
        ("_kafka_timestamp", pa.timestamp("us", "UTC")),
        ("_kafka_key", pa.string()),
        ("_schema_id", pa.int32()),
        ("_ingested_at", pa.timestamp("us", "UTC")),
        ("event_date", pa.date32()),
    ]
)


def _metric(name: str) -> dict[str, float]:
    with urllib.request.urlopen(f"http://127.0.0.1:{METRICS_PORT}/metrics", timeout=5) as response:
        text = response.read().decode()
    return {
        match[1]: float(match[2]) for match in re.finditer(rf"^({name}(?:{{[^}}]*}})?) (\S+)$", text, re.M)
    }


def _scrape(name: str) -> dict[str, float]:
    try:
        return _metric(name)
    except OSError:
        return {}


def test_continuous_refresh_follows_bronze_and_stops_cleanly(tmp_path: Path) -> None:
    place = support.refresh_place(tmp_path, GAMES, _SCHEMA)
    project, warehouse, bronze = place.project, place.warehouse, place.bronze
    writer = support.BronzeWriter(random.Random(7))
    rows: list[dict[str, Any]] = []  # every event written, for the upkeep's checks
    for _ in range(3):
        write_deltalake(str(bronze), _bronze_batch(writer, 21, list(GAMES), rows), mode="append")

    # bounded by rows: 2 of the 10-row versions below (the version bound alone would allow 3)
    bounds = ["--max-versions-per-build", "3", "--max-rows-per-build", "20"]
    # cycles of 15 rows or more (the 20-row ones) run compiled, smaller ones interpreted
    modes = ["--interpreted-below-rows", str(_INTERPRETED_BELOW)]
    flags = [*_FLAGS, *bounds, *modes, *UPKEEP_FLAGS]
    with support.refresh_running(place, tmp_path / "refresh.log", *flags) as refresh:
        _wait_for_build_of(DeltaTable(str(bronze)).version())
        quiet_versions, alpha_versions = _versions(warehouse, "quiet"), _versions(warehouse, "alpha")
        # an analyst's build holds the lock: the refresh is refused, naming it, until it is released
        lock = _hold_lock(warehouse, "analyst-build")
        for _ in range(4):  # a backlog of 4 versions, read 2 at a time (20 rows)
            write_deltalake(str(bronze), _bronze_batch(writer, 10, BUSY, rows), mode="append")
        second = DeltaTable(str(bronze)).version()
        wait_until(
            lambda: "a dbt build (invocation analyst-build" in (tmp_path / "refresh.log").read_text(),
            120,
            "the refresh to be refused the lock another build holds",
        )
        assert _versions(warehouse, "alpha") == alpha_versions, "a build wrote without the lock"
        DeltaTable(str(lock)).delete("holder = 'analyst-build'")
        wait_until(
            lambda: _metric("gamelake_refresh_bronze_version")["gamelake_refresh_bronze_version"] >= second,
            180,
            "a build triggered by the new bronze version",
        )
        write_deltalake(str(bronze), _bronze_batch(writer, 4, BUSY, rows), mode="append")
        last = DeltaTable(str(bronze)).version()
        _wait_for_build_of(last)
        lags = _metric("gamelake_layer_lag_seconds")
        assert set(lags) == {
            'gamelake_layer_lag_seconds{layer="silver"}',
            'gamelake_layer_lag_seconds{layer="gold"}',
        }
        builds = _metric("gamelake_refresh_builds_total")
        refusals = (tmp_path / "refresh.log").read_text().count("a dbt build (invocation analyst-build")
        assert builds['gamelake_refresh_builds_total{outcome="failed"}'] == refusals >= 1
        assert builds['gamelake_refresh_builds_total{outcome="ok"}'] >= 2
        # the refresh's own dashboard, in headless Chromium: a plot per panel, saved for a look
        dashboard = f"http://127.0.0.1:{METRICS_PORT}/dashboard"
        dom = rendered_dom(dashboard)
        assert dom.count("<svg") == len(DASHBOARD_PANELS)
        assert all(html.escape(panel.title) in dom for panel in DASHBOARD_PANELS)
        screenshot(dashboard, PROJECT_DIR / ".cache" / "screenshots" / "dashboard-refresh.png")
    output = (tmp_path / "refresh.log").read_text()
    assert refresh.returncode == 0, output[-3000:]
    assert re.search(r"refresh: stopped by SIGTERM after \d+ builds", output), output[-3000:]
    assert output.count("Using incubator modules") == 1, "more than one JVM for the builds"
    # every build replaces the slice: expected, so no snapshot dumps or stack traces for it
    assert "Change in the table id detected" not in output, output[-3000:]
    assert "InvalidOperationException" not in output and "Failed to alter table" not in output
    covered = [int(v) for v in re.findall(r"refresh: build ok in \S+ s, bronze version (\d+)", output)]
    steps = [b - a for a, b in itertools.pairwise(covered) if b != a]
    _assert_compiled_where_it_pays(output)
    # every build checked its new silver rows, the cycles that built two games of three too
    assert output.count(f"START test {SILVER_CHECK}") == len(covered), output[-3000:]
    assert covered[-1] == last and steps and max(steps) <= 2, f"builds covered versions {covered}"
    silver = {
        game: DeltaTable(str(warehouse / "spark" / "silver.db" / f"silver_{game}")).to_pyarrow_table()
        for game in GAMES
    }
    assert sum(t.num_rows for t in silver.values()) == 107, "every bronze row reached silver once"
    for game, table in silver.items():
        assert len(set(table["event_id"].to_pylist())) == table.num_rows, f"silver_{game} holds duplicates"
    # a game without new events: no build, no commit, and it did not hold the slice back
    assert _versions(warehouse, "quiet") == quiet_versions
    assert "refresh: building silver_alpha+ silver_beta+ silver_quarantine+" in output, output[-3000:]
    assert "silver_quiet+" not in output.split("refresh: build ok", 1)[1]
    # the first build's hooks made the lock table and took the lock; every later cycle's two dbt
    # invocations ran under the one lock the refresh took, and released, itself
    dbt_log = (project / "logs" / "dbt.log").read_text()
    assert dbt_log.count("build lock taken by invocation") == 1, "dbt's hooks took the lock after the first"
    assert dbt_log.count("build lock held by the caller, refresh-") >= len(covered) - 1 >= 1
    assert DeltaTable(str(lock)).to_pyarrow_table().num_rows == 0, "the refresh left its lock behind"
    # alpha, with rows in each of the three builds after the first (two of the backlog, the last)
    assert_upkept(place, output, rows, "alpha", "quiet", 3, last)


def _wait_for_build_of(version: int) -> None:
    built = "gamelake_refresh_bronze_version"
    wait_until(lambda: _scrape(built).get(built, -1) >= version, 300, f"a build of bronze version {version}")


def _hold_lock(warehouse: Path, holder: str) -> Path:
    """The build lock's row written as another build's, with delta-rs."""
    lock = warehouse / "spark" / "silver.db" / "gamelake_build_lock"
    schema = pa.schema(DeltaTable(str(lock)).schema().to_arrow())
    row = {"name": ["build"], "holder": [holder], "taken_at": [datetime.now(UTC)]}
    write_deltalake(str(lock), pa.Table.from_pydict(row, schema), mode="append")
    return lock


def _versions(warehouse: Path, game: str) -> dict[str, int]:
    """The Delta version of each of a game's tables."""
    tables = {
        f"silver_{game}": warehouse / "spark" / "silver.db" / f"silver_{game}",
        **{
            f"gold_{game}_{kind}": warehouse / "spark" / "gold.db" / f"gold_{game}_{kind}"
            for kind in ("player_agg", "daily_active")
        },
    }
    return {name: DeltaTable(str(path)).version() for name, path in tables.items()}


def _assert_compiled_where_it_pays(output: str) -> None:
    """The first build (all of bronze) compiled; a cycle of _INTERPRETED_BELOW rows or more
    compiled with its gold step interpreted; a smaller one interpreted throughout."""
    builds = re.findall(
        r"build ok .* (\d+) new bronze rows, (\w+), generated classes compiled: (\d+) \(([^)]*)\)", output
    )
    _, first_mode, first_classes, first_gold = builds[0]
    assert (first_mode, first_gold) == ("compiled", "no gold step") and int(first_classes) > 0, builds
    large = [b for b in builds[1:] if int(b[0]) >= _INTERPRETED_BELOW]
    small = [b for b in builds[1:] if int(b[0]) < _INTERPRETED_BELOW]
    assert large and small, f"a compiled and an interpreted cycle expected: {builds}"
    for _, mode, classes, in_gold in large:
        assert mode == "compiled" and in_gold.endswith(" in gold's step, interpreted"), builds
        # interpreted, Spark still compiles a few classes of its own (Delta's log state): a tenth
        assert int(in_gold.split()[0]) < int(classes) / 10, f"{builds}: gold's step generated its code"
    for _, mode, classes, _ in small:
        assert mode == "interpreted" and int(classes) < int(first_classes) / 10, builds
