"""dbt's build lock held from Python (ingest/ops/dbt_build_lock.py) on a real Delta table written
with delta-rs, shaped as dbt's on-run-start hook creates it. The Spark side (a dbt build refused
while the refresh holds it) is in tests/integration/test_refresh_continuous.py."""

from __future__ import annotations

import datetime as dt
import json
import threading
from pathlib import Path

import pyarrow as pa
import pytest
from deltalake import DeltaTable, write_deltalake

from ingest.ops.dbt_build_lock import LOCK_TABLE, BuildLockHeld, holding_build_lock, new_holder

SCHEMA = pa.schema([("name", pa.string()), ("holder", pa.string()), ("taken_at", pa.timestamp("us", "UTC"))])
HOURS_AGO = dt.timedelta(hours=3)


def _lock_table(tables: Path, holder: str | None = None, age: dt.timedelta = dt.timedelta()) -> Path:
    path = tables / LOCK_TABLE
    taken_at = dt.datetime.now(dt.UTC) - age
    rows = {"name": ["build"], "holder": [holder], "taken_at": [taken_at]} if holder else {}
    write_deltalake(str(path), pa.Table.from_pydict(rows or {k: [] for k in SCHEMA.names}, SCHEMA))
    return path


def _holders(path: Path) -> list[str]:
    return [row["holder"] for row in DeltaTable(str(path)).to_pyarrow_table().to_pylist()]


def test_the_lock_is_held_inside_and_released_after(tmp_path: Path) -> None:
    path = _lock_table(tmp_path)
    with holding_build_lock(tmp_path, "refresh", "refresh-1") as held:
        assert held and _holders(path) == ["refresh-1"]
    assert _holders(path) == []


def test_a_held_lock_refuses_naming_its_holder_and_stays_its_holder_s(tmp_path: Path) -> None:
    path = _lock_table(tmp_path, holder="inv-7", age=HOURS_AGO)
    refused = pytest.raises(BuildLockHeld, match=r"a dbt build \(invocation inv-7, since .* UTC\)")
    with refused, holding_build_lock(tmp_path, "refresh"):
        pytest.fail("the body ran without the lock")
    assert _holders(path) == ["inv-7"]


def test_a_lock_held_by_another_job_names_that_job_not_a_dbt_build(tmp_path: Path) -> None:
    holder = new_holder("refresh")
    _lock_table(tmp_path, holder=holder, age=HOURS_AGO)
    with pytest.raises(BuildLockHeld) as refused, holding_build_lock(tmp_path, "dbt-build"):
        pytest.fail("the body ran without the lock")
    message = str(refused.value)
    assert message.startswith(f"refresh ({holder}, since ") and "dbt build" not in message
    assert "nothing was changed" in message and "gamelake_release_build_lock" in message


def test_a_lock_older_than_stale_after_is_taken_over_and_a_younger_one_is_not(tmp_path: Path) -> None:
    path = _lock_table(tmp_path, holder="crashed-build", age=HOURS_AGO)
    with holding_build_lock(tmp_path, "refresh", "refresh-2", stale_after=dt.timedelta(hours=2)):
        assert _holders(path) == ["refresh-2"]
    assert _holders(path) == []

    _lock_table(tmp_path / "young", holder="running-build", age=dt.timedelta(minutes=5))
    refused = pytest.raises(BuildLockHeld, match="running-build")
    with refused, holding_build_lock(tmp_path / "young", "refresh", stale_after=dt.timedelta(hours=2)):
        pytest.fail("a running build's lock was taken over")


def test_of_two_racing_takers_exactly_one_holds_the_lock(tmp_path: Path) -> None:
    path = _lock_table(tmp_path)
    start, release = threading.Barrier(2), threading.Event()
    outcomes: dict[str, str] = {}

    def take(holder: str) -> None:
        start.wait()
        try:
            with holding_build_lock(tmp_path, "refresh", holder):
                outcomes[holder] = "held"
                release.wait(30)
        except BuildLockHeld:
            outcomes[holder] = "refused"
            release.set()

    racers = [threading.Thread(target=take, args=(f"refresh-{n}",)) for n in (1, 2)]
    for racer in racers:
        racer.start()
    for racer in racers:
        racer.join(60)
    assert sorted(outcomes.values()) == ["held", "refused"], outcomes
    assert _holders(path) == []


def test_without_a_lock_table_nothing_is_locked_or_created(tmp_path: Path) -> None:
    with holding_build_lock(tmp_path, "refresh") as held:
        assert not held
    assert not (tmp_path / LOCK_TABLE).exists()


def test_the_lock_is_checkpointed_every_tenth_commit_so_an_open_reads_a_few(tmp_path: Path) -> None:
    # each holding commits twice (take, release); an open replays the commits after the last
    # checkpoint, one GET each on S3
    path = _lock_table(tmp_path)
    pointer = path / "_delta_log" / "_last_checkpoint"
    checkpointed = []
    for holding in range(1, 8):
        with holding_build_lock(tmp_path, "refresh", f"refresh-{holding}"):
            pass
        checkpointed.append(json.loads(pointer.read_text())["version"] if pointer.exists() else None)
    # version 10 is the 5th holding's release; the 6th and 7th (to 14) cross no tenth
    assert checkpointed == [None, None, None, None, 10, 10, 10]
    assert DeltaTable(str(path)).version() == 14 and _holders(path) == []
