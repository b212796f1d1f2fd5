"""The continuous refresh's upkeep of silver and gold (ingest/ops/lakehouse_upkeep.py) on real
Spark + Delta: after its builds it compacts and vacuums the tables they wrote, and nothing a
reader relies on moves. Gold, reading silver's change feed across OPTIMIZE commits, stays exact;
silver's marks are still found; a game without new events is not visited again.

Bronze is written with delta-rs, as the ingest writes it. After the first build the refresh reads
alpha's batches one bronze version a build, compacting a partition at 2 small files and
vacuuming at once (0 hours), so each build's upkeep has work.
"""

from __future__ import annotations

import random
import signal
import subprocess
import sys
from collections import Counter
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
from deltalake import DeltaTable, write_deltalake

from ingest.ops.bronze_marks import committed_mark
from tests.integration import dbt_support as support
from tests.integration.ingest_support import wait_until

pytestmark = [pytest.mark.integration, pytest.mark.slow]

GAMES = {"alpha": True, "quiet": True}
ALPHA_BATCHES = 4  # bronze versions with alpha's events only, after the first with both games


def _batches(writer: support.BronzeWriter) -> list[list[dict[str, Any]]]:
    at = datetime.now(UTC).replace(tzinfo=None, microsecond=0) - timedelta(minutes=1)
    first = [writer.event(("alpha", "quiet")[i % 2], 4, at) for i in range(16)]
    return [first] + [[writer.event("alpha", 4, at) for _ in range(8)] for _ in range(ALPHA_BATCHES)]


def test_the_refresh_compacts_and_vacuums_what_its_builds_wrote(tmp_path: Path) -> None:
    batches = _batches(support.BronzeWriter(random.Random(11)))
    place = support.refresh_place(tmp_path, GAMES, support.arrow_bronze(batches[0], 4).schema)
    warehouse, bronze = place.warehouse, place.bronze
    write_deltalake(str(bronze), support.arrow_bronze(batches[0], 4), mode="append")

    log_path = tmp_path / "refresh.log"
    command = ["refresh", "--continuous", "--min-interval", "0", "--max-versions-per-build", "1"]
    command += ["--compact-files", "2", "--vacuum-hours", "0", "--metrics-port", "0"]
    upkeeps = lambda: log_path.read_text().count("refresh: upkeep of")  # noqa: E731
    with log_path.open("w") as log:
        refresh = subprocess.Popen(
            [sys.executable, "-m", "ingest.cli", *command],
            cwd=place.project,
            env=place.env,
            stdout=log,
            stderr=subprocess.STDOUT,
        )
        try:
            wait_until(lambda: upkeeps() == 1, 400, "the first build (the whole project) and its upkeep")
            for batch in batches[1:]:  # alpha's batches, read one bronze version a build
                write_deltalake(str(bronze), support.arrow_bronze(batch, 4), mode="append")
            last = DeltaTable(str(bronze)).version()
            wait_until(
                lambda: f"bronze version {last}," in log_path.read_text() and upkeeps() >= ALPHA_BATCHES + 1,
                600,
                "a build of each of alpha's bronze versions, each followed by its upkeep",
            )
        finally:
            refresh.send_signal(signal.SIGTERM)
            code = refresh.wait(240)
    output = log_path.read_text()
    assert code == 0, output[-3000:]
    assert "failed" not in output.split("refresh: build ok", 1)[1], output[-3000:]

    tables = warehouse / "spark"
    rows = [row for batch in batches for row in batch]
    silver = support.expected_silver(rows, "alpha")
    alpha = DeltaTable(str(tables / "silver.db" / "silver_alpha"))
    # every alpha build wrote a second small file to its partitions; the upkeep after it packed them
    assert output.count("compacted silver.silver_alpha") >= ALPHA_BATCHES, output[-3000:]
    assert _operations(alpha)["OPTIMIZE"] >= ALPHA_BATCHES, _operations(alpha)
    live = Counter(Path(uri).parent.name for uri in alpha.file_uris())
    assert live and set(live.values()) == {1}, f"silver_alpha's partitions kept small files: {live}"
    # and its vacuum (0 hours) deleted what they replaced, here and in gold
    for table in (alpha, DeltaTable(str(tables / "gold.db" / "gold_alpha_player_agg"))):
        assert _parquet_on_disk(table) == {Path(uri).resolve() for uri in table.file_uris()}
    # silver, and gold read from silver's change feed across the OPTIMIZE commits, stay exact
    silver_rows = alpha.to_pyarrow_table().to_pylist()
    assert sorted(row["event_id"] for row in silver_rows) == sorted(silver)
    player_agg = DeltaTable(str(tables / "gold.db" / "gold_alpha_player_agg")).to_pyarrow_table().to_pylist()
    expected = support.expected_player_agg(silver)
    assert {row["gamer_id"]: row["event_count"] for row in player_agg} == {
        gamer: agg["event_count"] for gamer, agg in expected.items()
    }
    assert {row["gamer_id"]: row["session_count"] for row in player_agg} == {
        gamer: agg["session_count"] for gamer, agg in expected.items()
    }
    # the upkeep's commits did not hide silver's mark from the readers that look for it
    mark = committed_mark(alpha.history(20), "silver.silver_alpha")
    assert mark is not None and mark.version == last, mark
    # quiet, one file a partition and nothing replaced, got no upkeep commit at all
    quiet = DeltaTable(str(tables / "silver.db" / "silver_quiet"))
    assert not set(_operations(quiet)) & {"OPTIMIZE", "VACUUM START", "VACUUM END"}, _operations(quiet)


def _operations(table: DeltaTable) -> Counter[str]:
    return Counter(str(commit["operation"]) for commit in table.history())


def _parquet_on_disk(table: DeltaTable) -> set[Path]:
    root = Path(table.table_uri.removeprefix("file://"))
    return {path.resolve() for path in root.rglob("*.parquet") if "_delta_log" not in path.parts}
