"""Old dead letters are purged: rows at once, the files holding their raw bytes after the grace period."""

from __future__ import annotations

import datetime as dt

import pyarrow as pa
from confluent_kafka import Message
from deltalake import DeltaTable, write_deltalake

from ingest.core.errors import FramingError
from ingest.landing.records import DeadLetter, TopicPartition
from ingest.landing.side_tables.dead_letters import DeltaDeadLetters, to_table
from ingest.ops.dead_letter_purge import purge

OLD_BYTES = b"player-email@example.org old"
NEW_BYTES = b"fresh raw bytes"


def _letter(offset: int, value: bytes) -> DeadLetter:
    record = Message(topic="events", partition=0, offset=offset, key=b"k", value=value, timestamp=(1, 1))
    return DeadLetter(record, FramingError(f"bad magic byte at events[0]@{offset}"), None)


def _files_containing(path, needle: bytes) -> list[str]:
    return [str(f) for f in path.rglob("*.parquet") if needle in f.read_bytes()]


def test_purge_deletes_old_dead_letters_and_then_their_files(tmp_path):
    path = tmp_path / "dead_letters"
    sink = DeltaDeadLetters(path, "app")
    sink.write([_letter(1, NEW_BYTES)], {TopicPartition("events", 0): 1}, "b-new")
    old = to_table([_letter(0, OLD_BYTES)], "b-old")
    forty_days_ago = dt.datetime.now(dt.UTC) - dt.timedelta(days=40)
    stamp = old.schema.field("dead_lettered_at")
    old = old.set_column(
        old.schema.get_field_index(stamp.name), stamp, pa.array([forty_days_ago], stamp.type)
    )
    write_deltalake(str(path), old, mode="append")
    assert _files_containing(path, OLD_BYTES)

    kept = purge(path, older_than_days=30)  # rows go at once; files wait for the grace period
    assert kept["deleted_rows"] == 1 and kept["removed_files"] == 0
    values = DeltaTable(str(path)).to_pyarrow_table().column("value").to_pylist()
    assert values == [NEW_BYTES]

    gone = purge(path, older_than_days=30, file_grace_hours=0)
    assert gone["deleted_rows"] == 0 and gone["removed_files"] >= 1
    assert not _files_containing(path, OLD_BYTES), "the old raw bytes are still on disk"
    assert _files_containing(path, NEW_BYTES)


def test_dlq_purge_from_the_command_line(tmp_path, capsys):
    from ingest import cli

    warehouse = ["--warehouse-dir", str(tmp_path)]
    assert cli.main(["dlq", "purge", *warehouse]) == 0
    assert "nothing to purge" in capsys.readouterr().out
    DeltaDeadLetters(tmp_path / "bronze" / "dead_letters", "app").write(
        [_letter(3, NEW_BYTES)], {TopicPartition("events", 0): 3}, "b"
    )
    assert cli.main(["dlq", "purge", *warehouse, "--older-than-days", "7"]) == 0
    assert '"deleted_rows": 0' in capsys.readouterr().out
    assert cli.main(["dlq", "purge", *warehouse, "--older-than-days", "0"]) == 2
    assert "--older-than-days N" in capsys.readouterr().err
