"""What a refresh's upkeep (ingest/ops/lakehouse_upkeep.py) must leave behind, checked on the
tables of a ``RefreshPlace`` after a run with ``UPKEEP_FLAGS``: the busy game's silver compacted
and vacuumed, gold read from silver's change feed across those commits still exact, marks still
found, checkpoints written, the slice vacuumed whole, and a quiet game left alone. Shared by the
continuous refresh test (local disk) and the upkeep test (S3)."""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path
from typing import Any

from deltalake import DeltaTable

from ingest.landing.delta.log_folder import log_folder
from ingest.landing.delta.table_location import TableLocation
from ingest.ops.bronze_marks import committed_mark
from ingest.ops.lakehouse_checkpoints import SPARK_INTERVAL
from ingest.ops.refresh_selection import SLICE
from ingest.ops.stats_columns import STATS_COLUMNS, stats_columns
from tests.integration import dbt_support as support

# compact a partition at 2 small files, vacuum at once, checkpoint every 2 commits: each build's
# upkeep has work
UPKEEP_FLAGS = ("--compact-files", "2", "--vacuum-hours", "0", "--checkpoint-commits", "2")


def assert_upkept(
    place: support.RefreshPlace,
    output: str,
    rows: list[dict[str, Any]],
    busy: str,
    quiet: str,
    builds_after_first: int,
    last_bronze: int,
) -> None:
    """``busy``'s tables, built ``builds_after_first`` times after the first build up to bronze
    version ``last_bronze`` from ``rows``, were kept up; ``quiet``'s, built once, untouched."""
    silver = support.expected_silver(rows, busy)
    table = place.table(f"silver.silver_{busy}").delta_table()
    # every build wrote a second small file to busy's partitions; the upkeep after it packed them
    assert output.count(f"compacted silver.silver_{busy}") >= builds_after_first, output[-3000:]
    assert _operations(table)["OPTIMIZE"] >= builds_after_first, _operations(table)
    live = Counter(uri.rsplit("/", 2)[1] for uri in table.file_uris())
    assert live and set(live.values()) == {1}, f"silver_{busy}'s partitions kept small files: {live}"
    # and its vacuum (0 hours) deleted what they replaced, here and in gold
    for name in (f"silver.silver_{busy}", f"gold.gold_{busy}_player_agg"):
        location = place.table(name)
        assert _data_files(location) == {_canonical(uri) for uri in location.delta_table().file_uris()}, name
    # silver, and gold read from silver's change feed across the OPTIMIZE commits, stay exact
    assert sorted(row["event_id"] for row in table.to_pyarrow_table().to_pylist()) == sorted(silver)
    player_agg = place.table(f"gold.gold_{busy}_player_agg").delta_table().to_pyarrow_table().to_pylist()
    expected = support.expected_player_agg(silver)
    for column in ("event_count", "session_count"):
        got = {row["gamer_id"]: row[column] for row in player_agg}
        assert got == {gamer: agg[column] for gamer, agg in expected.items()}, column
    # the upkeep's commits did not hide silver's mark from the readers that look for it
    mark = committed_mark(table.history(20), f"silver.silver_{busy}")
    assert mark is not None and mark.version == last_bronze, mark
    # the upkeep, not Spark, checkpointed the tables dbt gave Spark's backstop interval
    for name in (f"silver.silver_{busy}", f"gold.gold_{busy}_player_agg", SLICE):
        location = place.table(name)
        configuration = location.delta_table().metadata().configuration
        assert configuration.get("delta.checkpointInterval") == str(SPARK_INTERVAL), name
        assert _last_checkpoint(location) >= 2, f"{name} has no checkpoint of the upkeep's"
    # dbt created each kind with file statistics on its readers' columns, and Spark wrote no others
    for name in (f"silver.silver_{busy}", f"gold.gold_{busy}_player_agg", f"gold.gold_{busy}_daily_active"):
        delta = place.table(name).delta_table()
        wanted = stats_columns(name, delta.schema().to_arrow().names)
        assert wanted and delta.metadata().configuration.get(STATS_COLUMNS) == wanted, name
        assert _spark_statistics_columns(place.table(name)) == set(wanted.split(",")), name
    checkpointed = [
        line.split("checkpointed ", 1)[1] for line in output.splitlines() if "checkpointed " in line
    ]
    assert any(f"silver.silver_{busy}" in names for names in checkpointed), checkpointed
    # the slice, replaced whole every build, keeps only its live files on storage (full vacuum)
    slice_ = place.table(SLICE)
    assert _data_files(slice_) == {_canonical(uri) for uri in slice_.delta_table().file_uris()}
    # quiet, one file a partition and nothing replaced, got no upkeep commit at all
    untouched = _operations(place.table(f"silver.silver_{quiet}").delta_table())
    assert not set(untouched) & {"OPTIMIZE", "VACUUM START", "VACUUM END"}, untouched


def _spark_statistics_columns(table: TableLocation) -> set[str]:
    """The columns Spark's newest data commit to ``table`` wrote file statistics for (read from
    the commit itself: delta-rs derives its statistics schema from the table's properties)."""
    folder = log_folder(table)
    for version in range(table.delta_table().version(), -1, -1):
        text = folder.read_text(f"{version:020d}.json")
        actions = [json.loads(line) for line in (text or "").splitlines() if line]
        engine = next((str(a["commitInfo"].get("engineInfo", "")) for a in actions if "commitInfo" in a), "")
        stats = [json.loads(a["add"]["stats"]) for a in actions if a.get("add", {}).get("stats")]
        if engine.startswith("Apache-Spark") and stats:
            return {column for found in stats for column in found.get("nullCount", {})}
    raise AssertionError(f"no commit of Spark's with file statistics in {table}")


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
