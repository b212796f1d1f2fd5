"""The event log writes commit rows together, at most every ``flush_s``; other events at once."""

from __future__ import annotations

from deltalake import DeltaTable

from ingest.landing.side_tables.event_log import Event, EventLog
from ingest.landing.upkeep.table_upkeep import Retention, upkeep


class Clock:
    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


def _kinds(path) -> list[str]:
    rows = DeltaTable(str(path)).to_pyarrow_table().to_pylist()
    return sorted(r["kind"] for r in rows)


def test_commit_rows_wait_for_the_interval_and_land_in_one_commit(tmp_path):
    clock = Clock()
    log = EventLog(tmp_path, "i", flush_s=10.0, clock=clock)
    created = DeltaTable(str(tmp_path)).version()
    for batch in range(5):
        clock.now += 1.0
        log.record(Event("commit", batch_id=f"b{batch}", rows=batch))
    assert DeltaTable(str(tmp_path)).version() == created, "nothing written before the interval"
    clock.now += 5.0
    log.flush_if_due()
    assert DeltaTable(str(tmp_path)).version() == created + 1
    rows = DeltaTable(str(tmp_path)).to_pyarrow_table().to_pylist()
    assert sorted(r["batch_id"] for r in rows) == ["b0", "b1", "b2", "b3", "b4"]
    assert {r["instance_id"] for r in rows} == {"i"} and len({r["event_id"] for r in rows}) == 5


def test_any_other_event_is_written_at_once_with_the_buffered_commits(tmp_path):
    clock = Clock()
    log = EventLog(tmp_path, "i", flush_s=3600.0, clock=clock)
    created = DeltaTable(str(tmp_path)).version()
    log.record(Event("commit", batch_id="b0"))
    log.record(Event("fenced", batch_id="b1", message="another instance landed it"))
    assert DeltaTable(str(tmp_path)).version() == created + 1
    assert _kinds(tmp_path) == ["commit", "fenced"]


def test_flush_writes_what_is_buffered_and_nothing_when_empty(tmp_path):
    log = EventLog(tmp_path, "i", flush_s=3600.0, clock=Clock())
    created = DeltaTable(str(tmp_path)).version()
    log.flush()
    assert DeltaTable(str(tmp_path)).version() == created, "no empty commit"
    log.record(Event("commit", batch_id="b0"))
    log.flush()
    assert DeltaTable(str(tmp_path)).version() == created + 1 and _kinds(tmp_path) == ["commit"]


def test_without_an_interval_every_row_is_written_at_once(tmp_path):
    log = EventLog(tmp_path, "i")
    created = DeltaTable(str(tmp_path)).version()
    log.record(Event("commit", batch_id="b0"))
    log.record(Event("commit", batch_id="b1"))
    assert DeltaTable(str(tmp_path)).version() == created + 2


def test_a_flush_after_the_upkeep_changed_the_table_properties_still_lands(tmp_path):
    log = EventLog(tmp_path, "i")
    created = DeltaTable(str(tmp_path)).version()
    upkeep(tmp_path, Retention(log_hours=48, vacuum_hours=168))  # sets the retention properties
    log.record(Event("commit", batch_id="b0"))
    log.record(Event("commit", batch_id="b1"))
    assert DeltaTable(str(tmp_path)).version() == created + 3 and _kinds(tmp_path) == ["commit", "commit"]
