"""A bronze reader's mark as its Delta log holds it: in the data commit's userMetadata, or as a
table property, the later counting; and the refresh's once-a-cycle read of every reader's."""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest
from deltalake import CommitProperties, DeltaTable, write_deltalake

from ingest.landing.delta.table_properties import with_properties
from ingest.ops import bronze_marks
from ingest.ops.bronze_marks import (
    MARK,
    MARKED_AT,
    BronzeMark,
    ReaderMarks,
    bronze_mark,
    committed_mark,
    property_mark,
)
from ingest.ops.dbt_build_lock import LOCK_TABLE

AT = "2026-11-26 06:00:00"
QUARANTINE = "silver.silver_quarantine"


def _metadata(reader: str, version: int) -> str:
    return json.dumps({"gamelake.reader": reader, MARK: version, MARKED_AT: AT})


def _write(path: Path, metadata: str | None = None) -> None:
    """A silver-like append, carrying ``metadata`` as the commit's userMetadata as Spark writes it."""
    rows = pa.table({"event_id": ["e1"], "bronze_version": [1]})
    properties = CommitProperties(custom_metadata={"userMetadata": metadata}) if metadata else None
    write_deltalake(str(path), rows, mode="append", commit_properties=properties)


def test_the_newest_row_commit_naming_the_reader_holds_its_mark() -> None:
    commits = [
        {"operation": "OPTIMIZE"},  # upkeep after the build: no mark
        {"operation": "WRITE", "userMetadata": _metadata("silver.silver_b", 9)},  # another table's
        {"operation": "ADD COLUMNS", "userMetadata": _metadata("silver.silver_a", 8)},  # before its insert
        {"operation": "WRITE", "userMetadata": "not json"},
        {"operation": "WRITE", "userMetadata": _metadata("silver.silver_a", 7)},
        {"operation": "CREATE TABLE AS SELECT", "userMetadata": _metadata("silver.silver_a", 3)},
    ]
    assert committed_mark(commits, "silver.silver_a") == BronzeMark(7, AT)
    assert committed_mark(commits[:4], "silver.silver_a") is None


def test_a_property_mark_is_read_with_its_time() -> None:
    assert property_mark({MARK: "4", MARKED_AT: AT}) == BronzeMark(4, AT)
    assert property_mark({MARK: "4"}) == BronzeMark(4, "")  # not handed to a build: see below
    assert property_mark({}) is None


def test_the_later_of_the_commit_and_the_property_is_the_mark(tmp_path: Path) -> None:
    path = tmp_path / "silver_a"
    _write(path, _metadata("silver.silver_a", 5))
    assert bronze_mark(DeltaTable(str(path)), "silver.silver_a") == BronzeMark(5, AT)
    # a bronze rewrite moves marks as the property (ingest/ops/migrations/reader_marks.py)
    with_properties(DeltaTable(str(path)), {MARK: "8", MARKED_AT: AT})
    assert bronze_mark(DeltaTable(str(path)), "silver.silver_a") == BronzeMark(8, AT)
    _write(path, _metadata("silver.silver_a", 11))
    assert bronze_mark(DeltaTable(str(path)), "silver.silver_a") == BronzeMark(11, AT)
    assert bronze_mark(DeltaTable(str(path)), "silver.silver_other") == BronzeMark(8, AT)


def test_the_refresh_reads_every_readers_mark_and_follows_new_commits(tmp_path: Path) -> None:
    silver = tmp_path / "silver.db"
    _write(silver / "silver_a", _metadata("silver.silver_a", 2))
    _write(silver / "silver_quarantine", _metadata("silver.silver_quarantine", 2))
    _write(silver / "silver_unmarked")
    (silver / "not_a_table").mkdir()
    readers = ReaderMarks(silver)
    assert readers.read() == {"silver.silver_a": BronzeMark(2, AT), QUARANTINE: BronzeMark(2, AT)}

    _write(silver / "silver_a", _metadata("silver.silver_a", 6))
    _write(silver / "silver_quarantine")  # a commit without a mark keeps the one before
    assert readers.read() == {"silver.silver_a": BronzeMark(6, AT), QUARANTINE: BronzeMark(2, AT)}

    shutil.rmtree(silver / "silver_a")  # dropped, then made again: its old mark must not survive
    _write(silver / "silver_a")
    assert readers.read() == {QUARANTINE: BronzeMark(2, AT)}


def test_a_mark_without_its_time_is_not_handed_to_the_build(tmp_path: Path) -> None:
    silver = tmp_path / "silver.db"
    _write(silver / "silver_a", _metadata("silver.silver_a", 3))
    _write(silver / "silver_b")
    with_properties(DeltaTable(str(silver / "silver_b")), {MARK: "4"})
    assert json.loads(ReaderMarks(silver).handed()) == {"silver.silver_a": [3, AT]}


def test_the_build_locks_table_is_not_read_as_a_reader(tmp_path: Path) -> None:
    # it sits in silver's schema and commits twice a cycle, so its history would be read each time
    silver = tmp_path / "silver.db"
    _write(silver / "silver_a", _metadata("silver.silver_a", 3))
    _write(silver / LOCK_TABLE.name)
    readers = ReaderMarks(silver)
    assert readers.read() == {"silver.silver_a": BronzeMark(3, AT)}
    assert readers.versions() == {"silver.silver_a": 0}


def _counting_history_reads(monkeypatch: pytest.MonkeyPatch) -> list[tuple[str, int]]:
    """(reader, commits read) for each mark read from a table's commits from now on."""
    reads: list[tuple[str, int]] = []
    committed_mark = bronze_marks.committed_mark

    def counted(commits: list[dict[str, Any]], reader: str) -> BronzeMark | None:
        reads.append((reader, len(commits)))
        return committed_mark(commits, reader)

    monkeypatch.setattr(bronze_marks, "committed_mark", counted)
    return reads


def test_versions_read_again_follow_new_commits_without_reading_marks(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # before a cycle's gold step: silver's step has committed since the marks were read
    silver = tmp_path / "silver.db"
    _write(silver / "silver_a", _metadata("silver.silver_a", 2))
    _write(silver / "silver_quarantine", _metadata(QUARANTINE, 2))
    readers = ReaderMarks(silver)
    readers.read()
    reads = _counting_history_reads(monkeypatch)
    _write(silver / "silver_a", _metadata("silver.silver_a", 6))
    _write(silver / "silver_b")  # made since: left to the build, which asks Spark
    assert readers.read_versions() == {"silver.silver_a": 1, QUARANTINE: 0}
    assert reads == [], "a mark's history was read for versions alone"
    # the moved table's mark is read at the next read, not kept from before its commit
    assert readers.read() == {"silver.silver_a": BronzeMark(6, AT), QUARANTINE: BronzeMark(2, AT)}
    # silver_a: its one new commit; silver_b: the whole of the table made since
    assert reads == [("silver.silver_a", 1), ("silver.silver_b", 1)]


def test_a_moved_table_has_only_its_new_commits_read_and_keeps_an_older_mark(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # on S3 each commit read is a GET: a cycle's silver commit costs one, not HISTORY_DEPTH
    silver = tmp_path / "silver.db"
    _write(silver / "silver_a", _metadata("silver.silver_a", 2))
    readers = ReaderMarks(silver)
    assert readers.read() == {"silver.silver_a": BronzeMark(2, AT)}
    reads = _counting_history_reads(monkeypatch)
    upkeep_commits = bronze_marks.HISTORY_DEPTH + 5  # more than a first read looks back through
    for _ in range(upkeep_commits):
        _write(silver / "silver_a")
    assert readers.read() == {"silver.silver_a": BronzeMark(2, AT)}, "the mark before them was lost"
    _write(silver / "silver_a")
    _write(silver / "silver_a", _metadata("silver.silver_a", 9))
    assert readers.read() == {"silver.silver_a": BronzeMark(9, AT)}
    assert reads == [("silver.silver_a", upkeep_commits), ("silver.silver_a", 2)]
