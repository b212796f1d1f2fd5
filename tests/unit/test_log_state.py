"""LogState against logs delta-rs writes: after checkpoints, commits by others and log cleanup,
it holds what a delta-rs handle holds of protocol, schema, properties and app transactions."""

from __future__ import annotations

import json
import os
import time

import pyarrow as pa
import pytest
from deltalake import CommitProperties, DeltaTable, Transaction, write_deltalake

from ingest.landing.delta.log_state import LogState, UnreadableLogError
from ingest.landing.delta.table_properties import with_properties


def _append(path, value: int, app: str | None = None) -> None:
    txns = [Transaction(app, value)] if app else None
    write_deltalake(
        str(path),
        pa.table({"n": pa.array([value], pa.int64())}),
        mode="append",
        schema_mode="merge",
        commit_properties=CommitProperties(app_transactions=txns),
    )


def _same_as_delta_rs(state: LogState, path, apps: list[str]) -> None:
    table = DeltaTable(str(path))
    assert state.version == table.version()
    assert state.configuration == table.metadata().configuration
    assert state.arrow_schema() == pa.schema(table.schema().to_arrow())
    assert state.protocol.min_writer_version == table.protocol().min_writer_version
    assert {app: state.txns.get(app) for app in apps} == {app: table.transaction_version(app) for app in apps}


def test_the_state_from_commits_alone_matches_delta_rs(tmp_path):
    for i in range(5):
        _append(tmp_path, i, app=f"app:{i % 2}")
    with_properties(DeltaTable(str(tmp_path)), {"gamelake.mark": "x"})
    _same_as_delta_rs(LogState.load(tmp_path), tmp_path, ["app:0", "app:1", "app:never"])


def test_the_state_from_a_checkpoint_and_the_commits_after_it_matches_delta_rs(tmp_path):
    for i in range(4):
        _append(tmp_path, i, app="app:a")
    table = DeltaTable(str(tmp_path))
    with_properties(table, {"gamelake.mark": "before"})
    table.create_checkpoint()
    _append(tmp_path, 40, app="app:b")
    write_deltalake(str(tmp_path), pa.table({"n": [1], "extra": ["s"]}), mode="append", schema_mode="merge")
    state = LogState.load(tmp_path)
    assert state.configuration["gamelake.mark"] == "before" and "extra" in state.arrow_schema().names
    _same_as_delta_rs(state, tmp_path, ["app:a", "app:b"])


def test_a_checkpoint_of_a_table_with_no_app_transaction_reads(tmp_path):
    _append(tmp_path, 1)
    DeltaTable(str(tmp_path)).create_checkpoint()
    state = LogState.load(tmp_path)
    assert state.version == 0 and state.txns == {}


def test_advance_applies_other_writers_commits_and_committed_takes_only_the_next_version(tmp_path):
    _append(tmp_path, 0, app="app:a")
    state = LogState.load(tmp_path)
    assert not state.advance()
    _append(tmp_path, 7, app="app:a")
    assert state.advance() and state.txns["app:a"] == 7 and state.version == 1
    with pytest.raises(Exception, match="does not follow"):
        state.committed(5, {"app:a": 9})


def test_a_state_whose_next_commit_was_cleaned_up_knows_it_is_behind(tmp_path):
    _append(tmp_path, 0, app="app:a")
    with_properties(DeltaTable(str(tmp_path)), {"delta.logRetentionDuration": "interval 1 hours"})
    state = LogState.load(tmp_path)
    for i in range(2, 5):
        _append(tmp_path, i, app="app:a")
    table = DeltaTable(str(tmp_path))
    table.create_checkpoint()
    old = time.time() - 3 * 3600
    for version in range(4):  # the commits a paused writer never read, older than the retention
        os.utime(tmp_path / "_delta_log" / f"{version:020d}.json", (old, old))
    table.cleanup_metadata()
    assert not (tmp_path / "_delta_log" / f"{2:020d}.json").exists()
    assert state.behind_checkpoint()
    fresh = LogState.load(tmp_path)
    assert fresh.version == 4 and fresh.txns["app:a"] == 4


def test_what_this_reader_does_not_follow_is_a_clear_error(tmp_path):
    with pytest.raises(UnreadableLogError, match="not a Delta table"):
        (tmp_path / "_delta_log").mkdir()
        LogState.load(tmp_path)
    _append(tmp_path, 0)
    (tmp_path / "_delta_log" / "_last_checkpoint").write_text(json.dumps({"version": 0, "size": 1}))
    with pytest.raises(UnreadableLogError, match="has no checkpoint"):
        LogState.load(tmp_path)
