"""A delta-rs handle kept across batches is opened again once the S3 keys are renewed, and only then.

The table is a local folder reached as if on S3: delta-rs ignores the keys there, and what is
tested is when ``KeptTable`` opens it again, which depends on the keys alone."""

from __future__ import annotations

import json
from pathlib import Path

import pyarrow as pa
import pytest
from deltalake import CommitProperties, DeltaTable, write_deltalake

from ingest.core.settings.object_storage import S3Access
from ingest.landing.delta.kept_table import KeptTable
from ingest.landing.delta.table_location import TableLocation
from ingest.ops.bronze_marks import MARK, MARKED_AT, READER, BronzeMark, ReaderMarks
from tests.renewing_credentials import renewing

ROWS = pa.table({"n": [1]})
AT = "2026-11-26 06:00:00"


def _as_if_on_s3(path: Path, tokens: list[str]) -> TableLocation:
    write_deltalake(str(path), ROWS)
    return TableLocation(str(path), S3Access("ASIAEXAMPLE", "secret", credentials=renewing(tokens)))


def test_the_kept_handle_serves_until_the_keys_are_renewed(tmp_path: Path) -> None:
    tokens = ["t1"]
    kept = KeptTable(_as_if_on_s3(tmp_path / "t", tokens))
    first = kept.table
    write_deltalake(str(tmp_path / "t"), ROWS, mode="append")
    assert kept.table is first and first.version() == 0, "the same keys: the same handle, as it stood"


def test_renewed_keys_open_the_table_again_at_its_newest_version(tmp_path: Path) -> None:
    tokens = ["t1"]
    kept = KeptTable(_as_if_on_s3(tmp_path / "t", tokens))
    first = kept.table
    write_deltalake(str(tmp_path / "t"), ROWS, mode="append")
    tokens.append("t2")
    renewed = kept.table
    assert renewed is not first and renewed.version() == 1
    assert kept.table is renewed


def test_a_failed_open_is_tried_again_with_the_next_use(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    tokens = ["t1"]
    kept = KeptTable(_as_if_on_s3(tmp_path / "t", tokens))
    first = kept.table
    tokens.append("t2")

    def unreachable(self: TableLocation, version: int | None = None) -> None:
        raise OSError("S3 did not answer")

    with monkeypatch.context() as patched:
        patched.setattr(TableLocation, "delta_table", unreachable)
        with pytest.raises(OSError):
            _ = kept.table
    assert kept.table is not first, "opened now, with the renewed keys"


def test_a_local_table_is_opened_once(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    write_deltalake(str(tmp_path / "t"), ROWS)
    kept = KeptTable(TableLocation.of(tmp_path / "t"))
    monkeypatch.setattr(TableLocation, "delta_table", lambda *_: pytest.fail("opened again"))
    assert kept.table is kept.table


def test_the_readers_marks_reopen_their_tables_once_the_keys_are_renewed(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    silver = tmp_path / "silver.db"
    write_deltalake(str(silver / "silver_a"), ROWS)
    keys, opened = ["t1"], []
    open_table = TableLocation.delta_table
    monkeypatch.setattr(TableLocation, "keys", lambda self: keys[-1])  # a local folder, keys as on S3

    def counted(self: TableLocation, version: int | None = None) -> DeltaTable:
        opened.append(self.name)
        return open_table(self, version)

    monkeypatch.setattr(TableLocation, "delta_table", counted)
    readers = ReaderMarks(silver)
    readers.read()
    readers.read()
    assert opened == ["silver_a"], "kept open between cycles"
    keys.append("t2")
    _append_mark(silver / "silver_a", 7)
    assert readers.read() == {"silver.silver_a": BronzeMark(7, AT)}
    assert opened == ["silver_a", "silver_a"] and readers.versions() == {"silver.silver_a": 1}


def _append_mark(path: Path, version: int) -> None:
    """A silver commit carrying its bronze mark, as Spark writes it."""
    metadata = json.dumps({READER: "silver.silver_a", MARK: version, MARKED_AT: AT})
    properties = CommitProperties(custom_metadata={"userMetadata": metadata})
    write_deltalake(str(path), ROWS, mode="append", commit_properties=properties)
