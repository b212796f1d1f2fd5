"""Bronze commits written straight into the local _delta_log: what delta-rs reads back, that a
lone writer reads no commit again, and that other writers' commits are seen and never overwritten."""

from __future__ import annotations

import errno
import time

import pyarrow as pa
from deltalake import DeltaTable, write_deltalake

from ingest.landing.decode.bronze_columns import ROWS_KEY
from ingest.landing.delta import bronze_log, bronze_writer, local_delta_log
from ingest.landing.delta.bronze_writer import BronzeWriter
from ingest.landing.delta.fences import Landing
from ingest.landing.delta.local_delta_log import why_not
from ingest.landing.delta.log_state import LogState
from ingest.landing.records import TopicPartition
from tests.unit.test_ingest_writer import _rows

TP = TopicPartition("events", 0)


def _commits_read(monkeypatch) -> list[int]:
    """The versions whose commit files the writers' states read (commits by others, mostly)."""
    read: list[int] = []
    original = LogState._read_commit

    def counted(state: LogState, version: int) -> bool:
        found = original(state, version)
        if found:
            read.append(version)
        return found

    monkeypatch.setattr(LogState, "_read_commit", counted)
    return read


def test_a_blind_append_reads_back_through_delta_rs_with_rows_offsets_and_commit_metadata(tmp_path):
    writer = BronzeWriter(tmp_path / "bronze", "app")
    assert why_not(writer.state) is None
    rows = _rows([0, 1, 2]).set_column(6, "event_date", pa.array([None, None, None], pa.date32()))
    version = writer.commit(
        writer.write_files(rows), {TP: Landing(None, 2)}, {"batch_id": "b1", ROWS_KEY: "3"}
    )
    bronze = DeltaTable(str(tmp_path / "bronze"))
    assert bronze.version() == version
    assert bronze.transaction_version("app:events:0") == 2
    landed = bronze.to_pyarrow_table()
    assert landed["_kafka_offset"].to_pylist() == [0, 1, 2] and landed["event_date"].null_count == 3
    newest = bronze.history(1)[0]
    assert (newest["operation"], newest["batch_id"], newest[ROWS_KEY]) == ("WRITE", "b1", "3")
    assert newest["operationParameters"]["mode"] == "Append"


def test_a_lone_writer_reads_no_commit_and_opens_no_delta_rs_handle(tmp_path, monkeypatch):
    writer = BronzeWriter(tmp_path / "bronze", "app")
    read = _commits_read(monkeypatch)

    def no_handle(*args, **kwargs):
        raise AssertionError("a lone writer's batch needs no delta-rs handle")

    monkeypatch.setattr(bronze_writer, "DeltaTable", no_handle)
    monkeypatch.setattr(bronze_log, "DeltaTable", no_handle)
    for offset in range(25):  # one batch: its columns, then its commit
        writer.columns()
        writer.commit(
            writer.write_files(_rows([offset])), {TP: Landing(offset - 1 if offset else None, offset)}, {}
        )
    monkeypatch.undo()
    assert read == []  # its own commits update its state as they land
    bronze = DeltaTable(str(tmp_path / "bronze"))
    assert bronze.transaction_version("app:events:0") == 24 and bronze.to_pyarrow_table().num_rows == 25


def test_another_writers_commit_is_seen_by_the_next_batch_and_never_overwritten(tmp_path, monkeypatch):
    writer = BronzeWriter(tmp_path / "bronze", "app")
    writer.commit(writer.write_files(_rows([0])), {TP: Landing(None, 0)}, {})
    other = DeltaTable(str(tmp_path / "bronze"))
    merged = pa.schema([*pa.schema(other.schema().to_arrow()), pa.field("score", pa.int64())])
    write_deltalake(
        other, merged.empty_table(), mode="append", schema_mode="merge", partition_by=["event_date"]
    )
    read = _commits_read(monkeypatch)
    assert "score" in writer.columns().columns and len(read) == 1
    files = writer.write_files(_rows([1]))
    write_deltalake(other, _rows([50]), mode="append", schema_mode="merge", partition_by=["event_date"])
    version = writer.commit(files, {TP: Landing(0, 1)}, {})  # its next version is taken: read again
    bronze = DeltaTable(str(tmp_path / "bronze"))
    assert version == bronze.version() and len(read) == 2
    assert sorted(bronze.to_pyarrow_table()["_kafka_offset"].to_pylist()) == [0, 1, 50]


def test_a_table_with_check_constraints_is_committed_through_delta_rs(tmp_path, monkeypatch):
    writer = BronzeWriter(tmp_path / "bronze", "app")
    DeltaTable(str(tmp_path / "bronze")).alter.add_constraint({"offset_positive": "_kafka_offset >= 0"})
    writer.columns()
    assert "check constraints" in (why_not(writer.state) or "")

    def no_blind_append(*args, **kwargs):
        raise AssertionError("a constrained table must not take the blind-append path")

    monkeypatch.setattr(writer.delta_log, "append", no_blind_append)
    writer.commit(writer.write_files(_rows([0, 1])), {TP: Landing(None, 1)}, {})
    writer.commit(writer.write_files(_rows([2])), {TP: Landing(1, 2)}, {})
    bronze = DeltaTable(str(tmp_path / "bronze"))
    assert bronze.transaction_version("app:events:0") == 2 and bronze.to_pyarrow_table().num_rows == 3


def test_a_filesystem_without_hard_links_switches_the_writer_to_delta_rs_and_loses_nothing(
    tmp_path, monkeypatch
):
    writer = BronzeWriter(tmp_path / "bronze", "app")
    writer.commit(writer.write_files(_rows([0])), {TP: Landing(None, 0)}, {})

    def refused(source, target):
        raise PermissionError(errno.EPERM, "Operation not permitted")

    monkeypatch.setattr(local_delta_log.os, "link", refused)
    writer.commit(writer.write_files(_rows([1, 2])), {TP: Landing(0, 2)}, {})
    writer.commit(writer.write_files(_rows([3])), {TP: Landing(2, 3)}, {})
    assert "refuses hard links" in (writer.log.not_blind or "")
    assert not list(writer.delta_log.folder.glob("_commit_*.json.tmp"))  # nothing staged is left
    bronze = DeltaTable(str(tmp_path / "bronze"))
    assert sorted(bronze.to_pyarrow_table()["_kafka_offset"].to_pylist()) == [0, 1, 2, 3]
    assert bronze.transaction_version("app:events:0") == 3


def test_commits_the_log_cleanup_removes_while_the_writer_reads_them_never_lose_a_batch(
    tmp_path, monkeypatch
):
    writer = BronzeWriter(tmp_path / "bronze", "app")
    writer.commit(writer.write_files(_rows([0])), {TP: Landing(None, 0)}, {})
    idle_at = writer.state.version
    other = DeltaTable(str(tmp_path / "bronze"))
    for offset in (50, 51, 52, 53):  # another writer, while this one is idle
        write_deltalake(
            other, _rows([offset]), mode="append", schema_mode="merge", partition_by=["event_date"]
        )
    other.update_incremental()
    other.create_checkpoint()
    log = tmp_path / "bronze" / "_delta_log"
    read_commit = LogState._read_commit

    def cleanup_runs_during_the_read(state: LogState, version: int) -> bool:
        found = read_commit(state, version)
        if version == idle_at + 1:  # it removes the next ones, covered by the checkpoint
            for gone in (idle_at + 2, idle_at + 3):
                (log / f"{gone:020d}.json").unlink()
        return found

    monkeypatch.setattr(LogState, "_read_commit", cleanup_runs_during_the_read)
    # Idle for longer than the writer trusts that no unread commit can be gone (bronze_log.py).
    idle_until = time.monotonic() + 3600
    monkeypatch.setattr(bronze_log.time, "monotonic", lambda: idle_until)
    files = writer.write_files(_rows([1]))
    version = writer.commit(files, {TP: Landing(0, 1)}, {})
    monkeypatch.undo()
    assert version == idle_at + 5  # after the checkpoint's version, not a removed one's name
    bronze = DeltaTable(str(tmp_path / "bronze"))
    assert sorted(bronze.to_pyarrow_table()["_kafka_offset"].to_pylist()) == [0, 1, 50, 51, 52, 53]
