"""The continuous refresh's upkeep of silver and gold (ingest/ops/lakehouse_upkeep.py) with the
lakehouse on the local S3 server (bronze and dbt's tables under one ``s3://`` prefix, as
GAMELAKE_INGEST_WAREHOUSE_URI puts them), where the refresh's own reads of the Delta logs, its
build lock and its vacuum go through delta-rs on S3 and Spark through S3A: after its builds it
compacts, vacuums and checkpoints (with delta-rs) the tables they wrote, vacuums the slice, and
nothing a reader relies on moves (tests/integration/upkeep_checks.py). On a local disk the same
checks run in test_refresh_continuous.py, in that test's refresh process.

Bronze is written with delta-rs, as the ingest writes it. After the first build the refresh reads
alpha's batches one bronze version a build, compacting a partition at 2 small files, vacuuming at
once (0 hours) and checkpointing every 2 commits, so each build's upkeep has work.
"""

from __future__ import annotations

import random
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest

from tests.integration import dbt_support as support
from tests.integration.ingest_support import wait_until
from tests.integration.upkeep_checks import UPKEEP_FLAGS, assert_upkept

pytestmark = [pytest.mark.integration, pytest.mark.slow]

GAMES = {"alpha": True, "quiet": True}
ALPHA_BATCHES = 2  # bronze versions with alpha's events only, after the first with both games:
# two builds after the first show the upkeep repeating on tables it has already compacted


def _batches(writer: support.BronzeWriter) -> list[list[dict[str, Any]]]:
    at = datetime.now(UTC).replace(tzinfo=None, microsecond=0) - timedelta(minutes=1)
    first = [writer.event(("alpha", "quiet")[i % 2], 4, at) for i in range(16)]
    return [first] + [[writer.event("alpha", 4, at) for _ in range(8)] for _ in range(ALPHA_BATCHES)]


def test_the_refresh_compacts_and_vacuums_what_its_builds_wrote_on_s3(on_s3: str, tmp_path: Path) -> None:
    batches = _batches(support.BronzeWriter(random.Random(11)))
    place = support.refresh_place(tmp_path, GAMES, support.arrow_bronze(batches[0], 4).schema, on_s3)
    place.append_to_bronze(support.arrow_bronze(batches[0], 4))

    log_path = tmp_path / "refresh.log"
    flags = ["--min-interval", "0", "--max-versions-per-build", "1", *UPKEEP_FLAGS, "--metrics-port", "0"]
    upkeeps = lambda: log_path.read_text().count("refresh: upkeep of")  # noqa: E731
    with support.refresh_running(place, log_path, *flags) as refresh:
        wait_until(lambda: upkeeps() == 1, 400, "the first build (the whole project) and its upkeep")
        for batch in batches[1:]:  # alpha's batches, read one bronze version a build
            place.append_to_bronze(support.arrow_bronze(batch, 4))
        last = place.bronze.delta_table().version()
        wait_until(
            lambda: f"bronze version {last}," in log_path.read_text() and upkeeps() >= ALPHA_BATCHES + 1,
            600,
            "a build of each of alpha's bronze versions, each followed by its upkeep",
        )
    output = log_path.read_text()
    assert refresh.returncode == 0, output[-3000:]
    assert "failed" not in output.split("refresh: build ok", 1)[1], output[-3000:]
    rows = [row for batch in batches for row in batch]
    assert_upkept(place, output, rows, "alpha", "quiet", ALPHA_BATCHES, last)
