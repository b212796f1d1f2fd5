"""The continuous refresh's upkeep of silver and gold (ingest/ops/lakehouse_upkeep.py) on real
Spark + Delta: after its builds it compacts, vacuums and checkpoints (with delta-rs) the tables
they wrote, vacuums the slice, and nothing a reader relies on moves. Gold, reading silver's
change feed across OPTIMIZE commits, stays exact; silver's marks are still found; a game without
new events is not visited again. It runs with the lakehouse on a local disk, and on the local S3
server (bronze and dbt's tables under one ``s3://`` prefix, as GAMELAKE_INGEST_WAREHOUSE_URI puts
them), where the refresh's own reads of the Delta logs, its build lock and its vacuum go through
delta-rs on S3 and Spark through S3A.

Bronze is written with delta-rs, as the ingest writes it. After the first build the refresh reads
alpha's batches one bronze version a build, compacting a partition at 2 small files, vacuuming at
once (0 hours) and checkpointing every 2 commits, so each build's upkeep has work.
"""

from __future__ import annotations

import json
import random
from collections import Counter
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
from deltalake import DeltaTable

from ingest.landing.delta.log_folder import log_folder
from ingest.landing.delta.table_location import TableLocation
from ingest.ops.bronze_marks import committed_mark
from ingest.ops.lakehouse_checkpoints import SPARK_INTERVAL
from ingest.ops.refresh_selection import SLICE
from tests.integration import dbt_support as support
from tests.integration.ingest_support import wait_until

pytestmark = [pytest.mark.integration, pytest.mark.slow]

GAMES = {"alpha": True, "quiet": True}
ALPHA_BATCHES = 2  # bronze versions with alpha's events only, after the first with both games:
# two builds after the first show the upkeep repeating on tables it has already compacted


def _batches(writer: support.BronzeWriter) -> list[list[dict[str, Any]]]:
    at = datetime.now(UTC).replace(tzinfo=None, microsecond=0) - timedelta(minutes=1)
    first = [writer.event(("alpha", "quiet")[i % 2], 4, at) for i in range(16)]
    return [first] + [[writer.event("alpha", 4, at) for _ in range(8)] for _ in range(ALPHA_BATCHES)]


@pytest.mark.parametrize("storage", ["local disk", "s3"])
def test_the_refresh_compacts_and_vacuums_what_its_builds_wrote(
    storage: str, request: pytest.FixtureRequest, tmp_path: Path
) -> None:
    batches = _batches(support.BronzeWriter(random.Random(11)))
    lakehouse = request.getfixturevalue("on_s3") if storage == "s3" else None
    place = support.refresh_place(tmp_path, GAMES, support.arrow_bronze(batches[0], 4).schema, lakehouse)
    place.append_to_bronze(support.arrow_bronze(batches[0], 4))

    log_path = tmp_path / "refresh.log"
    flags = ["--min-interval", "0", "--max-versions-per-build", "1"]
    flags += ["--compact-files", "2", "--vacuum-hours", "0", "--checkpoint-commits", "2"]
    flags += ["--metrics-port", "0"]
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
    silver = support.expected_silver(rows, "alpha")
    alpha = place.table("silver.silver_alpha").delta_table()
    # every alpha build wrote a second small file to its partitions; the upkeep after it packed them
    assert output.count("compacted silver.silver_alpha") >= ALPHA_BATCHES, output[-3000:]
    assert _operations(alpha)["OPTIMIZE"] >= ALPHA_BATCHES, _operations(alpha)
    live = Counter(uri.rsplit("/", 2)[1] for uri in alpha.file_uris())
    assert live and set(live.values()) == {1}, f"silver_alpha's partitions kept small files: {live}"
    # and its vacuum (0 hours) deleted what they replaced, here and in gold
    for name in ("silver.silver_alpha", "gold.gold_alpha_player_agg"):
        table = place.table(name)
        assert _data_files(table) == {_canonical(uri) for uri in table.delta_table().file_uris()}, name
    # silver, and gold read from silver's change feed across the OPTIMIZE commits, stay exact
    silver_rows = alpha.to_pyarrow_table().to_pylist()
    assert sorted(row["event_id"] for row in silver_rows) == sorted(silver)
    player_agg = place.table("gold.gold_alpha_player_agg").delta_table().to_pyarrow_table().to_pylist()
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
    # the upkeep, not Spark, checkpointed the tables dbt gave Spark's backstop interval
    for name in ("silver.silver_alpha", "gold.gold_alpha_player_agg", SLICE):
        table = place.table(name).delta_table()
        assert table.metadata().configuration.get("delta.checkpointInterval") == str(SPARK_INTERVAL), name
        assert _last_checkpoint(place.table(name)) >= 2, f"{name} has no checkpoint of the upkeep's"
    checkpointed = [
        line.split("checkpointed ", 1)[1] for line in output.splitlines() if "checkpointed " in line
    ]
    assert any("silver.silver_alpha" in names for names in checkpointed), checkpointed
    # the slice, replaced whole every build, keeps only its live files on storage (full vacuum)
    slice_ = place.table(SLICE)
    assert _data_files(slice_) == {_canonical(uri) for uri in slice_.delta_table().file_uris()}
    # quiet, one file a partition and nothing replaced, got no upkeep commit at all
    quiet = place.table("silver.silver_quiet").delta_table()
    assert not set(_operations(quiet)) & {"OPTIMIZE", "VACUUM START", "VACUUM END"}, _operations(quiet)


def _last_checkpoint(table: TableLocation) -> int:
    text = log_folder(table).read_text("_last_checkpoint")
    return int(json.loads(text)["version"]) if text else -1


def _operations(table: DeltaTable) -> Counter[str]:
    return Counter(str(commit["operation"]) for commit in table.history())


def _data_files(table: TableLocation) -> set[str]:
    """The Parquet files under ``table``'s folder or prefix, its log aside: what is on storage."""
    if table.is_local:
        root = table.local_path
        return {str(p.resolve()) for p in root.rglob("*.parquet") if "_delta_log" not in p.parts}
    pages = table.s3.get_paginator("list_objects_v2").paginate(Bucket=table.bucket, Prefix=table.key(""))
    keys = [item["Key"] for page in pages for item in page.get("Contents", [])]
    return {
        f"s3://{table.bucket}/{key}" for key in keys if key.endswith(".parquet") and "/_delta_log/" not in key
    }


def _canonical(uri: str) -> str:
    return (
        str(Path(uri.removeprefix("file://")).resolve())
        if "://" not in uri or uri.startswith("file://")
        else uri
    )
