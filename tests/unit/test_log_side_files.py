"""Which side files a Delta log cleanup leaves, and that their removal keeps every loadable
version (ingest/ops/log_side_files.py). Spark's own side files removed from a real table's log,
and the table read back: tests/integration/test_lakehouse_checkpoints.py."""

from __future__ import annotations

from pathlib import Path

import pyarrow as pa
from deltalake import DeltaTable, write_deltalake

from ingest.landing.delta.log_folder import LocalLogFolder
from ingest.ops.log_side_files import orphaned, remove_orphaned


def _v(version: int) -> str:
    return f"{version:020d}"


def test_the_side_files_of_versions_before_the_oldest_commit_or_checkpoint_are_orphaned() -> None:
    names = [
        *(f"{_v(v)}.crc" for v in range(3, 8)),
        *(f".{_v(v)}.json.crc" for v in range(3, 8)),
        *(f".{_v(v)}.crc.crc" for v in range(3, 8)),
        f".{_v(5)}.checkpoint.parquet.crc",
        f"{_v(5)}.checkpoint.parquet",
        *(f"{_v(v)}.json" for v in range(5, 8)),
        "_last_checkpoint",
        "._last_checkpoint.crc",
        "_staged_commits",
    ]
    expected = [f".{_v(v)}.{kind}.crc" for v in (3, 4) for kind in ("crc", "json")] + [
        f"{_v(v)}.crc" for v in (3, 4)
    ]
    assert orphaned(names) == sorted(expected)


def test_a_multi_part_or_v2_checkpoint_keeps_its_version() -> None:
    multi = f"{_v(4)}.checkpoint.0000000001.0000000002.parquet"
    v2 = f"{_v(4)}.checkpoint.80a083e8-7026-4e79-81be-64bd76c43a11.json"
    for checkpoint in (multi, v2):
        assert orphaned([f"{_v(3)}.crc", f"{_v(4)}.crc", checkpoint, f"{_v(5)}.json"]) == [f"{_v(3)}.crc"]


def test_a_log_with_no_commit_or_checkpoint_orphans_nothing() -> None:
    assert orphaned([f"{_v(3)}.crc", f".{_v(3)}.json.crc", "_last_checkpoint"]) == []


def test_removing_the_orphans_keeps_the_table_readable(tmp_path: Path) -> None:
    for i in range(6):
        write_deltalake(str(tmp_path), pa.table({"n": [i]}), mode="append")
        if i == 2:
            DeltaTable(str(tmp_path)).create_checkpoint()  # at version 2
    log = tmp_path / "_delta_log"
    for v in range(6):  # as Spark leaves them beside its commits on a local disk
        (log / f"{_v(v)}.crc").write_text("{}")
        (log / f".{_v(v)}.json.crc").write_bytes(b"")
    (log / f"{_v(0)}.json").unlink()
    (log / f"{_v(1)}.json").unlink()  # as a cleanup leaves the log: versions 2-5 loadable
    assert remove_orphaned(LocalLogFolder(log)) == 4
    assert not (log / f"{_v(1)}.crc").exists() and (log / f"{_v(2)}.crc").exists()
    assert (log / f".{_v(2)}.json.crc").exists()
    assert DeltaTable(str(tmp_path), version=2).version() == 2
    assert sorted(DeltaTable(str(tmp_path)).to_pyarrow_table().column("n").to_pylist()) == [0, 1, 2, 3, 4, 5]


class _RefusingFolder(LocalLogFolder):
    def remove(self, names: list[str]) -> None:
        raise PermissionError(13, "Permission denied", str(self.folder / names[0]))


def test_a_removal_that_fails_is_logged_and_fails_nothing_else(tmp_path: Path, caplog) -> None:
    for name in (f"{_v(0)}.crc", f"{_v(1)}.json"):
        (tmp_path / name).write_text("{}")
    assert remove_orphaned(_RefusingFolder(tmp_path)) == 0
    assert (tmp_path / f"{_v(0)}.crc").exists()
    assert "stay until its next checkpoint" in caplog.text and "Permission denied" in caplog.text
