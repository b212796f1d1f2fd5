"""What the refresh's watch hands a cycle's builds: the readers' marks and bronze's and the
readers' versions before the cycle, and before its gold step the versions alone, read again so
that gold reads silver as of the version the silver step committed."""

from __future__ import annotations

import json
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pyarrow as pa
import pytest
from deltalake import CommitProperties, write_deltalake

from ingest.landing.delta.table_location import TableLocation
from ingest.ops import refresh_command
from ingest.ops.bronze_marks import HANDED_CONF, MARK, MARKED_AT, ReaderMarks
from ingest.ops.bronze_watch import BRONZE_RELATION, VERSIONS_CONF, BronzeWatch
from ingest.ops.codegen_mode import FACTORY_MODE, WHOLE_STAGE
from ingest.ops.refresh_selection import ANY_GAME, SliceReaders
from tests.unit.conf_session import ConfSession

SILVER = "silver.silver_alpha"
AT = "2026-11-26 06:00:00"


def _append(path: Path, metadata: dict[str, object] | None = None) -> None:
    """A commit of one row, carrying ``metadata`` as its userMetadata as Spark writes a mark."""
    carried = CommitProperties(custom_metadata={"userMetadata": json.dumps(metadata)}) if metadata else None
    write_deltalake(str(path), pa.table({"n": [1]}), mode="append", commit_properties=carried)


def _mark(version: int) -> dict[str, object]:
    return {"gamelake.reader": SILVER, MARK: version, MARKED_AT: AT}


def test_the_gold_step_is_handed_the_silver_version_committed_since_the_cycle_began(tmp_path: Path) -> None:
    bronze, silver = tmp_path / "bronze", tmp_path / "silver.db"
    _append(bronze)
    _append(bronze)
    _append(silver / "silver_alpha", _mark(1))
    watch = BronzeWatch(bronze, ReaderMarks(silver))
    watch.version()
    cycle = ConfSession()
    watch.hand_versions_to(cycle)
    assert cycle.handed(VERSIONS_CONF) == {SILVER: 0, BRONZE_RELATION: 1}
    assert SILVER in cycle.handed(HANDED_CONF)

    _append(silver / "silver_alpha")  # the silver step's insert
    _append(bronze)  # landed meanwhile: the cycle reads bronze up to the version it polled
    gold_step = ConfSession()
    watch.hand_table_versions_to(gold_step)
    assert gold_step.handed(VERSIONS_CONF) == {SILVER: 1, BRONZE_RELATION: 1}
    assert set(gold_step.conf.values) == {VERSIONS_CONF}, "gold reads no mark: none is handed again"


def test_a_refresh_cycle_hands_its_gold_step_silvers_new_version_and_not_its_marks(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    bronze, silver = tmp_path / "bronze", tmp_path / "silver.db"
    _append(bronze)
    _append(silver / "silver_alpha", _mark(0))
    watch = BronzeWatch(bronze, ReaderMarks(silver))
    spark = ConfSession()
    watch.version()
    watch.hand_versions_to(spark)  # as build_once does before the cycle
    marks_before = spark.conf.values[HANDED_CONF]
    at_gold: dict[str, str] = {}

    def invoke(*args: str) -> Any:
        if "--indirect-selection" in args:  # the gold step
            at_gold.update(spark.conf.values)
        elif "--threads" in args:  # the silver step: its insert, and the mark in its commit
            _append(silver / "silver_alpha", _mark(5))
        return SimpleNamespace(success=True, exception=None, result=SimpleNamespace(results=[]))

    slice_readers = SliceReaders(
        {"silver_alpha": 0, "silver_quarantine": 5}, {ANY_GAME: 5, "alpha": 5}, ["alpha"]
    )
    monkeypatch.setattr(refresh_command, "_DBT", SimpleNamespace(invoke=invoke))
    monkeypatch.setattr(refresh_command, "read_slice_readers", lambda _: slice_readers)
    monkeypatch.setattr(refresh_command, "classes_compiled", lambda _: 0)  # no JVM to ask here
    tables = TableLocation.of(tmp_path)
    assert refresh_command._build_locked(spark, watch, tables, {}, whole=False, threads=(1, 2)) is not None

    assert json.loads(at_gold[VERSIONS_CONF]) == {SILVER: 1, BRONZE_RELATION: 0}
    assert at_gold[HANDED_CONF] == marks_before, "the marks were read again before the gold step"
    assert at_gold[WHOLE_STAGE] == "false" and at_gold[FACTORY_MODE] == "NO_CODEGEN", "gold compiled"
