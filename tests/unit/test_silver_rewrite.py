"""``ingest bronze migrate-native-types`` on the silver tables that pass bronze's JSON text through.

The silver and gold tables here are made as dbt leaves them, with delta-rs: silver holds
staging's names (``schema_id``, ``kafka_offset``, ...), bronze's field columns passed through,
event_date partitions, the change data feed and its bronze mark; gold holds ``silver_version``.
The Spark build around the same command is in tests/integration/test_dbt_native_migration.py.
"""

from __future__ import annotations

import datetime as dt
from pathlib import Path

import pyarrow as pa
import pytest
from deltalake import DeltaTable, write_deltalake
from gamelake_dev.studio_schema import comparable, matches

from ingest.core.contract import load_contract
from ingest.ops.migrations import silver_rewrite
from ingest.ops.migrations.json_text_plan import MigrationError
from ingest.ops.migrations.migrate_json_text import migrate
from tests.unit.test_native_migration import _after_migration, _old_bronze
from tests.unit.test_native_types import _Registry

SILVER = "silver_alpha"
GOLDS = ("gold_alpha_player_agg", "gold_alpha_daily_active")


def _as_staged(bronze: pa.Table) -> pa.Table:
    """Bronze's rows under staging's names, as a silver build inserts them."""
    renames = {c.bronze: c.name for c in load_contract().columns}
    return bronze.rename_columns([renames.get(n, n) for n in bronze.column_names])


def _silver(tables: Path, bronze: Path, rows: slice = slice(None)) -> Path:
    path = tables / "silver.db" / SILVER
    landed = DeltaTable(str(bronze))
    staged = _as_staged(landed.to_pyarrow_table())
    write_deltalake(
        str(path),
        staged.slice(rows.start or 0, (rows.stop or staged.num_rows) - (rows.start or 0)),
        partition_by=["event_date"],
        configuration={"delta.enableChangeDataFeed": "true"},
    )
    DeltaTable(str(path)).alter.set_table_properties(
        {
            "gamelake.bronze_version": str(landed.version()),
            "gamelake.bronze_marked_at": "2099-01-01 00:00:00",
        },
        raise_if_not_exists=False,
    )
    return path


def _gold(tables: Path, name: str, silver_version: int) -> Path:
    path = tables / "gold.db" / name
    write_deltalake(
        str(path),
        pa.table(
            {
                "gamer_id": ["a", "b"],
                "silver_version": pa.array([silver_version - 1, silver_version], pa.int64()),
            }
        ),
    )
    return path


def _mark(path: Path) -> int:
    return max(DeltaTable(str(path)).to_pyarrow_table()["silver_version"].to_pylist())


def _migrate_killed_at(
    module, step: str, bronze: Path, tables: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A migration killed as it reaches ``module.step`` (a KeyboardInterrupt, as from a signal)."""

    def killed(*args, **kwargs):
        raise KeyboardInterrupt(f"killed at {step}")

    with monkeypatch.context() as patched:
        patched.setattr(module, step, killed)
        with pytest.raises(KeyboardInterrupt):
            migrate(bronze, _Registry(), "app", tables_dir=tables)


def _setup(tmp_path: Path, count: int = 30):
    bronze, tables = tmp_path / "bronze", tmp_path / "spark"
    sent = matches(1, count, seed=5)
    _old_bronze(bronze, sent)
    silver = _silver(tables, bronze)
    golds = [_gold(tables, name, DeltaTable(str(silver)).version()) for name in GOLDS]
    return bronze, tables, sent, silver, golds


def test_silver_holding_json_text_is_converted_with_bronze_and_gold_marks_move_past_it(
    tmp_path: Path,
) -> None:
    bronze, tables, sent, silver, golds = _setup(tmp_path)
    before = DeltaTable(str(silver))
    kept = {r["event_id"]: r for r in before.to_pyarrow_table().to_pylist()}
    configuration = before.metadata().configuration

    summary = migrate(bronze, _Registry(), "app", tables_dir=tables)

    after = DeltaTable(str(silver))
    report = summary["silver"][f"silver.{SILVER}"]
    rewritten = before.version() + 1
    assert report["version"] == rewritten and after.version() == rewritten + 1, "then its bronze mark moved"
    assert report["rows_rewritten"] == len(sent) and "loadout" in report["columns_converted"]
    rows = {r["event_id"]: r for r in after.to_pyarrow_table().to_pylist()}
    # what staging gives after bronze's rewrite; the oneof case column bronze gains comes with
    # silver's next build (on_schema_change: append_new_columns)
    converted = _as_staged(DeltaTable(str(bronze)).to_pyarrow_table()).drop_columns(["outcome"])
    assert rows == {r["event_id"]: r for r in converted.to_pylist()}
    for m in sent:  # (the event's time is event_at in silver)
        assert comparable({**rows[m.event_id], "event_timestamp": m.event_timestamp.ToDatetime(dt.UTC)}) == {
            **_after_migration(m),
            "event_timestamp": m.event_timestamp.ToDatetime(dt.UTC),
        }, m.event_id
        for name in ("kafka_offset", "schema_id", "ingested_at", "event_date"):
            assert rows[m.event_id][name] == kept[m.event_id][name]
    assert after.metadata().configuration["delta.enableChangeDataFeed"] == "true"
    assert {
        k: v for k, v in after.metadata().configuration.items() if not k.startswith("gamelake.bronze")
    } == {k: v for k, v in configuration.items() if not k.startswith("gamelake.bronze")}
    # past bronze's rewrite and its mark of native types
    assert after.metadata().configuration["gamelake.bronze_version"] == str(DeltaTable(str(bronze)).version())
    assert report["gold_marks_moved"] == {f"gold.{name}": rewritten for name in GOLDS}
    assert [_mark(g) for g in golds] == [rewritten] * 2
    assert (
        pa.schema(after.schema().to_arrow()).field("loadout").type
        == pa.schema(DeltaTable(str(bronze)).schema().to_arrow()).field("loadout").type
    )


def test_a_gold_table_that_has_not_read_all_of_silver_stops_the_job_with_nothing_changed(
    tmp_path: Path,
) -> None:
    bronze, tables, _, silver, golds = _setup(tmp_path)
    DeltaTable(str(golds[0])).update(updates={"silver_version": "0"}, predicate="true")
    write_deltalake(str(silver), DeltaTable(str(silver)).to_pyarrow_table().slice(0, 1), mode="append")
    versions = [DeltaTable(str(p)).version() for p in (bronze, silver)]
    files = sorted(p.name for p in tmp_path.rglob("*.parquet"))

    with pytest.raises(MigrationError, match=rf"gold\.{GOLDS[0]} has read silver\.{SILVER} up to version 0"):
        migrate(bronze, _Registry(), "app", tables_dir=tables)

    assert [DeltaTable(str(p)).version() for p in (bronze, silver)] == versions
    assert sorted(p.name for p in tmp_path.rglob("*.parquet")) == files


def test_a_dry_run_converts_silver_too_and_writes_nothing(tmp_path: Path) -> None:
    bronze, tables, sent, silver, _ = _setup(tmp_path)
    versions = [DeltaTable(str(p)).version() for p in (bronze, silver)]
    files = sorted(p.name for p in tmp_path.rglob("*.parquet"))
    seen: list[tuple[int, int]] = []

    summary = migrate(
        bronze, _Registry(), "app", lambda done, total: seen.append((done, total)), True, tables
    )

    assert summary["dry_run"] and summary["silver"][f"silver.{SILVER}"]["rows_rewritten"] == len(sent)
    assert seen[-1] == (2 * len(sent), 2 * len(sent)), "bronze's rows and silver's"
    assert [DeltaTable(str(p)).version() for p in (bronze, silver)] == versions
    assert sorted(p.name for p in tmp_path.rglob("*.parquet")) == files


def test_a_rerun_after_a_crash_between_silver_and_gold_moves_the_marks_and_converts_bronze(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    bronze, tables, sent, silver, golds = _setup(tmp_path)
    marks = [_mark(g) for g in golds]

    _migrate_killed_at(silver_rewrite, "move_past", bronze, tables, monkeypatch)

    rewritten = DeltaTable(str(silver)).version()
    assert [_mark(g) for g in golds] == marks, "left behind the rewrite"
    assert pa.schema(DeltaTable(str(bronze)).schema().to_arrow()).field("loadout").type == pa.string()

    summary = migrate(bronze, _Registry(), "app", tables_dir=tables)

    assert summary["marks_repaired"] == {f"gold.{name}": rewritten for name in GOLDS}
    assert summary["silver"] == {}, "silver is native already"
    assert [_mark(g) for g in golds] == [rewritten] * 2
    rows = {r["event_id"]: r for r in DeltaTable(str(bronze)).to_pyarrow_table().to_pylist()}
    assert all(comparable(rows[m.event_id]) == _after_migration(m) for m in sent)


def test_a_running_dbt_build_stops_the_job_and_the_lock_is_released_after(tmp_path: Path) -> None:
    bronze, tables, _, silver, _ = _setup(tmp_path, count=8)
    lock = tables / "silver.db" / "gamelake_build_lock"
    held = pa.table(
        {"name": ["build"], "holder": ["inv-1"], "taken_at": pa.array([0], pa.timestamp("us", tz="UTC"))}
    )
    write_deltalake(str(lock), held)
    version = DeltaTable(str(silver)).version()

    with pytest.raises(
        MigrationError, match="a dbt build \\(invocation inv-1, since 1970-01-01 00:00:00 UTC\\)"
    ):
        migrate(bronze, _Registry(), "app", tables_dir=tables)
    assert DeltaTable(str(silver)).version() == version

    DeltaTable(str(lock)).delete("true")
    summary = migrate(bronze, _Registry(), "app", tables_dir=tables)
    assert summary["silver"][f"silver.{SILVER}"]["version"] == version + 1
    assert DeltaTable(str(lock)).to_pyarrow_table().num_rows == 0, "released"


def test_a_killed_run_s_lock_is_named_as_this_job_s_with_how_to_release_it(tmp_path: Path) -> None:
    bronze, tables, _, silver, _ = _setup(tmp_path, count=4)
    lock = tables / "silver.db" / "gamelake_build_lock"
    killed = "migrate-native-types-5b1e"  # its ``finally`` never ran
    held = pa.table(
        {"name": ["build"], "holder": [killed], "taken_at": pa.array([0], pa.timestamp("us", tz="UTC"))}
    )
    write_deltalake(str(lock), held)
    versions = [DeltaTable(str(t)).version() for t in (bronze, silver)]

    with pytest.raises(MigrationError) as raised:
        migrate(bronze, _Registry(), "app", tables_dir=tables)
    assert [DeltaTable(str(t)).version() for t in (bronze, silver)] == versions
    message = str(raised.value)
    assert f"another run of migrate-native-types ({killed}" in message and "dbt build" not in message
    assert "gamelake_release_build_lock --args '{force: true}'" in message


def test_a_rerun_after_a_crash_between_bronze_and_its_readers_marks_moves_them(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from ingest.ops.migrations import json_text_marker

    bronze, tables, _, silver, _ = _setup(tmp_path, count=12)
    mark = DeltaTable(str(silver)).metadata().configuration["gamelake.bronze_version"]

    # killed right after bronze's commit
    _migrate_killed_at(json_text_marker, "mark_typed", bronze, tables, monkeypatch)

    rewritten = int(mark) + 1
    assert DeltaTable(str(bronze)).version() == rewritten
    assert DeltaTable(str(silver)).metadata().configuration["gamelake.bronze_version"] == mark, "left behind"

    summary = migrate(bronze, _Registry(), "app", tables_dir=tables)

    assert summary["marks_repaired"] == {f"silver.{SILVER}": rewritten}
    assert summary["rows_rewritten"] == 0, "bronze is native already"
    assert DeltaTable(str(silver)).metadata().configuration["gamelake.bronze_version"] == str(rewritten)
