"""LogState against logs delta-rs writes: after checkpoints, commits by others and log cleanup,
it holds what a delta-rs handle holds of protocol, schema, properties and app transactions."""

from __future__ import annotations

import json
import os
import time

import pyarrow as pa
import pytest
from deltalake import CommitProperties, DeltaTable, Transaction, write_deltalake

from ingest.landing.delta import bronze_log
from ingest.landing.delta.bronze_log import BronzeLog
from ingest.landing.delta.log_state import LogState, UnreadableLogError
from ingest.landing.delta.table_location import TableLocation
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
    _clean_up_unread_commits(tmp_path)  # the commits a paused writer never read
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


def test_log_retention_reads_the_tables_property_and_delta_defaults(tmp_path):
    _append(tmp_path, 0)
    assert LogState.load(tmp_path).log_retention_s() == 30 * 86400
    for text, seconds in [("interval 48 hours", 48 * 3600), ("interval 1 minute", 60), ("2 days", 2 * 86400)]:
        with_properties(DeltaTable(str(tmp_path)), {"delta.logRetentionDuration": text})
        assert LogState.load(tmp_path).log_retention_s() == seconds
    with_properties(DeltaTable(str(tmp_path)), {"delta.logRetentionDuration": "forever"})
    assert LogState.load(tmp_path).log_retention_s() == 0, "unreadable: look every time"


def _clean_up_unread_commits(path) -> None:
    """Three commits by another writer, checkpointed, aged past a 1-hour retention and removed."""
    for i in range(2, 5):
        _append(path, i, app="app:a")
    table = DeltaTable(str(path))
    table.create_checkpoint()
    old = time.time() - 3 * 3600
    for version in range(4):
        os.utime(path / "_delta_log" / f"{version:020d}.json", (old, old))
    table.cleanup_metadata()
    assert not (path / "_delta_log" / f"{2:020d}.json").exists()


@pytest.mark.parametrize(
    ("retention", "look_after_s"), [("interval 1 hours", 60), ("interval 1 minutes", 30)]
)
def test_a_writer_looks_for_a_log_cleanup_once_it_could_have_removed_unread_commits(
    tmp_path, monkeypatch, retention, look_after_s
):
    _append(tmp_path, 0, app="app:a")
    with_properties(DeltaTable(str(tmp_path)), {"delta.logRetentionDuration": retention})
    clock = [1000.0]
    monkeypatch.setattr(bronze_log.time, "monotonic", lambda: clock[0])
    log = BronzeLog(TableLocation.of(tmp_path))
    looks: list[str] = []
    identity = log.state.folder.identity
    monkeypatch.setattr(log.state.folder, "identity", lambda name: looks.append(name) or identity(name))

    clock[0] += look_after_s - 1
    assert log.latest().version == 1 and looks == [], "no commit can be gone yet: no look"
    clock[0] += look_after_s - 1  # since the last look, which found no next version either
    assert log.latest().version == 1 and looks == []
    # Not what a real cleanup can do this soon: the test removes commits early to see the look.
    _clean_up_unread_commits(tmp_path)
    clock[0] += look_after_s
    state = log.latest()
    assert looks == ["_last_checkpoint"]
    assert state.version == 4 and state.txns["app:a"] == 4
