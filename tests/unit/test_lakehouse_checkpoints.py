"""Which tables the refresh's upkeep checkpoints, and that delta-rs' checkpoint of a table keeps
its rows (ingest/ops/lakehouse_checkpoints.py). Spark reading delta-rs' checkpoints of dbt's
tables back, in a running refresh: tests/integration/test_refresh_upkeep.py."""

from __future__ import annotations

from pathlib import Path

import pyarrow as pa
import yaml
from deltalake import DeltaTable, write_deltalake

from ingest.core.settings.paths import PROJECT_DIR
from ingest.landing.delta.table_location import TableLocation
from ingest.ops.lakehouse_checkpoints import (
    DEFAULT_LOG_HOURS,
    INTERVAL,
    LOG_RETENTION,
    SPARK_INTERVAL,
    TOMBSTONE_RETENTION,
    Behind,
    checkpoint,
    commits_behind,
    due_checkpoints,
    refresh_table_properties,
)


def _commit(path: Path, times: int) -> None:
    for i in range(times):
        write_deltalake(str(path), pa.table({"n": [i]}), mode="append")


def test_a_table_is_behind_by_its_commits_after_its_last_checkpoint(tmp_path: Path) -> None:
    _commit(tmp_path, 4)  # versions 0-3, no checkpoint
    place = TableLocation.of(tmp_path)
    assert commits_behind("silver.silver_x", place, place.delta_table()) == Behind("silver.silver_x", 3)
    assert checkpoint("silver.silver_x", place.delta_table(), place)
    assert commits_behind("silver.silver_x", place, place.delta_table()).commits == 0
    _commit(tmp_path, 2)
    assert commits_behind("silver.silver_x", place, place.delta_table()).commits == 2
    assert sorted(DeltaTable(str(tmp_path)).to_pyarrow_table().column("n").to_pylist()) == [0, 0, 1, 1, 2, 3]


def test_tables_due_together_are_checkpointed_a_few_a_cycle_the_furthest_behind_first() -> None:
    behind = [Behind(f"silver.t{i}", 10) for i in range(16)] + [Behind("gold.g", 12), Behind("gold.h", 3)]
    # 18 tables, every 10 commits: at most 1 + 18 // 10 = 2 a cycle
    assert due_checkpoints(behind, 10) == ["gold.g", "silver.t0"]
    assert due_checkpoints([Behind("gold.h", 9)], 10) == []


def test_tables_that_fall_due_together_stay_spread_once_spread() -> None:
    # 16 tables committing once a cycle from the same version, as a refresh's games do
    behind = dict.fromkeys((f"t{i:02}" for i in range(16)), 0)
    picked: dict[int, list[tuple[str, int]]] = {}
    for cycle in range(1, 61):
        behind = {name: commits + 1 for name, commits in behind.items()}
        due = due_checkpoints([Behind(name, commits) for name, commits in behind.items()], 10)
        picked[cycle] = [(name, behind[name]) for name in due]
        behind.update(dict.fromkeys(due, 0))
    # the first round spreads them over cycles 10-17, two a cycle, not 16 in cycle 10
    assert [len(picked[cycle]) for cycle in range(1, 20)] == [0] * 9 + [2] * 8 + [0, 0]
    # from then on each table is checkpointed every 10th commit, in its own cycle
    later = [commits for cycle in range(20, 61) for _, commits in picked[cycle]]
    assert set(later) == {10}
    assert max(len(due) for due in picked.values()) == 2


def test_dbt_creates_the_refresh_tables_with_the_interval_and_log_hours_the_upkeep_keeps() -> None:
    project = yaml.safe_load((PROJECT_DIR / "dbt_project.yml").read_text())["models"]["gamelake"]
    wanted = refresh_table_properties(DEFAULT_LOG_HOURS)
    assert wanted[INTERVAL] == str(SPARK_INTERVAL)
    assert wanted[LOG_RETENTION] == wanted[TOMBSTONE_RETENTION] == "interval 6 hours"
    properties = project["silver"]["+tblproperties"]
    assert {key: properties.get(key) for key in wanted} == wanted
    # gold's models set theirs whole (macros/project/stats_columns.sql), as the slice's does
    gold = (PROJECT_DIR / "macros" / "project" / "stats_columns.sql").read_text()
    slice_model = (PROJECT_DIR / "models" / "bronze" / "stg_bronze__new_events.sql").read_text()
    for key, value in wanted.items():
        assert f"'{key}': '{value}'" in gold, key
        assert f"'{key}': '{value}'" in slice_model, key


def test_a_table_whose_log_outlasts_its_retention_loses_only_the_commits_before_its_checkpoint(
    tmp_path: Path,
) -> None:
    # what gold's stale-mark rule leans on (ingest/ops/gold_marks.py): delta-rs' cleanup keeps the
    # commit its checkpoint was taken at and every later one
    write_deltalake(
        str(tmp_path), pa.table({"n": [0]}), mode="append", configuration={LOG_RETENTION: "interval 0 hours"}
    )
    _commit(tmp_path, 4)  # versions 1-4
    place = TableLocation.of(tmp_path)
    assert checkpoint("silver.silver_x", place.delta_table(), place)
    _commit(tmp_path, 1)  # version 5
    commits = sorted(p.name for p in (tmp_path / "_delta_log").glob("*.json"))
    assert commits == [f"{version:020d}.json" for version in (4, 5)]
