"""``ingest bronze migrate-native-types``: a bronze landed before native types (JSON text columns)
rewritten in one commit to what the decoder lands today, rows, offsets and properties kept.

The old bronze is made as the old decoder made it: messages, repeated fields, maps, wrappers and
Duration as ``json.dumps(MessageToDict(message)[field], sort_keys=True)``, null when absent, and
scalars without presence (an unset oneof member or ``optional`` read as its default value).
"""

from __future__ import annotations

import json
from pathlib import Path

import pyarrow as pa
import pytest
from deltalake import DeltaTable
from gamelake_dev.studio_schema import comparable, expected, matches
from google.protobuf import json_format

from ingest.core.errors import ConfigError
from ingest.landing.decode.decoder import Decoder
from ingest.landing.delta.bronze_format import JSON_ERA_COLUMNS, JsonEraBronzeError
from ingest.landing.delta.bronze_writer import BronzeWriter
from ingest.landing.delta.fences import Landing
from ingest.landing.records import TopicPartition, txn_app_id
from ingest.ops.migrations.json_text_convert import UnparsableText
from ingest.ops.migrations.json_text_plan import MigrationError
from ingest.ops.migrations.migrate_json_text import migrate
from tests.unit.test_native_types import _decoded, _Registry

JSON_COLUMNS = (
    "loadout",
    "scores",
    "rewards",
    "stats",
    "wallet",
    "played",
    "bonus",
    "nickname",
    "tree",
    "extra",
)
NO_PRESENCE = ("winner", "draw_round", "rank")  # the old decoder read them as plain scalars
TP = TopicPartition("studio", 0)
IDLE = TopicPartition("studio", 1)  # only dead letters landed: an offset without rows


def _old_table(messages) -> pa.Table:
    """The rows the old decoder landed for ``messages``."""
    table = _decoded(1, messages).table.drop_columns(["outcome"])
    for name in JSON_COLUMNS:
        texts = [_old_json(m, name) for m in messages]
        table = table.set_column(table.schema.get_field_index(name), name, pa.array(texts, pa.string()))
    for name in NO_PRESENCE:
        index = table.schema.get_field_index(name)
        values = pa.array([getattr(m, name) for m in messages], table.schema.field(name).type)
        table = table.set_column(index, name, values)
    return table


def _old_json(message, name: str) -> str | None:
    as_dict = json_format.MessageToDict(message, preserving_proto_field_name=True)
    return json.dumps(as_dict[name], sort_keys=True) if name in as_dict else None


def _old_bronze(path: Path, messages) -> BronzeWriter:
    writer = BronzeWriter(path, "app")
    half = len(messages) // 2
    for part, landings in (
        (messages[:half], {TP: Landing(None, half - 1)}),
        (messages[half:], {TP: Landing(half - 1, len(messages) - 1), IDLE: Landing(None, 41)}),
    ):
        table = _old_table(part)
        writer.evolve(list(table.schema), {"studio.Match": {"event_id": 1}})
        writer.commit(writer.write_files(table), landings, {})
    # As the first service with native types left it: its JSON-text columns listed.
    listed = {JSON_ERA_COLUMNS: json.dumps(JSON_COLUMNS)}
    DeltaTable(str(path)).alter.set_table_properties(listed, raise_if_not_exists=False)
    return writer


def _after_migration(m) -> dict:
    """``expected(m)``, but for the scalars whose presence the old rows never had."""
    return {**expected(m), **{name: getattr(m, name) for name in NO_PRESENCE}, "outcome": None}


def _guard_problems(path: Path) -> list[str]:
    plan = Decoder(_Registry(), 0, 0.0).plan(1, (0,))
    guard = BronzeWriter(path, "app").columns()
    return guard.violations(plan.message_type, plan.columns, plan.nested_types())


def test_json_text_columns_become_native_in_one_commit_keeping_rows_offsets_and_properties(
    tmp_path: Path,
) -> None:
    path = tmp_path / "bronze"
    sent = matches(1, 90, seed=7)
    _old_bronze(path, sent)
    before = DeltaTable(str(path))
    old_rows = {r["event_id"]: r for r in before.to_pyarrow_table().to_pylist()}
    configuration, version = before.metadata().configuration, before.version()
    with pytest.raises(JsonEraBronzeError, match=r"JSON text from before native types in loadout, scores"):
        BronzeWriter(path, "app")

    seen: list[tuple[int, int]] = []
    summary = migrate(path, _Registry(), "app", lambda done, total: seen.append((done, total)))

    after = DeltaTable(str(path))
    assert after.version() == version + 2 and summary["version"] == version + 1  # rewrite, then the mark
    rows = after.to_pyarrow_table().to_pylist()
    assert len(rows) == len(sent) == summary["rows_rewritten"] and seen[-1] == (len(sent), len(sent))
    by_id = {r["event_id"]: r for r in rows}
    for m in sent:
        assert comparable(by_id[m.event_id]) == _after_migration(m), m.event_id
        kept = ("_ingested_at", "_kafka_offset", "event_date", "event_timestamp", "replay", "big_counter")
        assert {k: by_id[m.event_id][k] for k in kept} == {k: old_rows[m.event_id][k] for k in kept}
    assert after.transaction_version(txn_app_id("app", TP)) == len(sent) - 1
    assert after.transaction_version(txn_app_id("app", IDLE)) == 41
    assert after.metadata().configuration == {**configuration, JSON_ERA_COLUMNS: "[]"}
    assert after.metadata().partition_columns == ["event_date"]
    assert set(summary["columns_converted"]) == set(JSON_COLUMNS) - {"extra"}
    assert "outcome" in summary["columns_added"] and summary["columns_added"]["outcome"] != "computed"
    assert _guard_problems(path) == []


def test_the_rewrite_is_not_a_data_change_for_its_new_files(tmp_path: Path) -> None:
    path = tmp_path / "bronze"
    _old_bronze(path, matches(1, 12, seed=8))
    rewrite = migrate(path, _Registry(), "app")["version"]
    last = (path / "_delta_log" / f"{rewrite:020d}.json").read_text().splitlines()
    adds = [json.loads(line)["add"] for line in last if '"add"' in line]
    assert adds and not any(a["dataChange"] for a in adds)
    assert any('"txn"' in line for line in last)


def test_a_text_that_cannot_be_read_back_aborts_naming_the_column_and_changes_nothing(
    tmp_path: Path,
) -> None:
    path = tmp_path / "bronze"
    sent = matches(1, 12, seed=9)
    writer = BronzeWriter(path, "app")
    table = _old_table(sent)
    bad = table["loadout"].to_pylist()
    bad[4] = '{"weapon": {"not": "a string"}}'
    table = table.set_column(table.schema.get_field_index("loadout"), "loadout", pa.array(bad))
    writer.evolve(list(table.schema), {})
    writer.commit(writer.write_files(table), {TP: Landing(None, 11)}, {})
    files = sorted(p.name for p in path.rglob("*.parquet"))
    version = DeltaTable(str(path)).version()

    with pytest.raises(UnparsableText) as raised:
        migrate(path, _Registry(), "app")

    assert "column 'loadout' of the row studio[0]@4" in str(raised.value)
    assert "Nothing was changed" in str(raised.value)
    assert DeltaTable(str(path)).version() == version
    assert sorted(p.name for p in path.rglob("*.parquet")) == files
    assert pa.schema(DeltaTable(str(path)).schema().to_arrow()).field("loadout").type == pa.string()


def test_an_interrupt_as_the_commit_returns_keeps_every_file_the_table_now_references(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = tmp_path / "bronze"
    sent = matches(1, 12, seed=10)
    _old_bronze(path, sent)
    commit = DeltaTable.create_write_transaction

    def interrupted_as_it_returns(self, *args, **kwargs):
        commit(self, *args, **kwargs)
        raise KeyboardInterrupt  # Ctrl-C after the commit landed, before the job knew it

    monkeypatch.setattr(DeltaTable, "create_write_transaction", interrupted_as_it_returns)
    with pytest.raises(KeyboardInterrupt):
        migrate(path, _Registry(), "app")
    monkeypatch.undo()

    after = DeltaTable(str(path))
    assert all(
        (path / uri).exists() for uri in after.get_add_actions(flatten=True).column("path").to_pylist()
    )
    assert sorted(r["event_id"] for r in after.to_pyarrow_table().to_pylist()) == sorted(
        m.event_id for m in sent
    )


def test_a_missing_table_is_refused(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="no bronze table"):
        migrate(tmp_path / "nowhere", _Registry(), "app")


def test_a_native_bronze_has_nothing_to_migrate(tmp_path: Path) -> None:
    from tests.unit.test_native_types import write_studio_bronze

    write_studio_bronze(tmp_path / "bronze", 6)
    version = DeltaTable(str(tmp_path / "bronze")).version()
    summary = migrate(tmp_path / "bronze", _Registry(), "app")
    assert summary["rows_rewritten"] == 0 and DeltaTable(str(tmp_path / "bronze")).version() == version


def test_the_service_refuses_a_bronze_from_before_native_types_until_it_is_migrated(tmp_path: Path) -> None:
    from deltalake import write_deltalake

    from tests.unit.test_native_types import _land

    path = tmp_path / "bronze"
    # As the service before native types left it: JSON text columns, no property saying so.
    write_deltalake(str(path), _old_table(matches(1, 12, seed=7)), partition_by=["event_date"])
    version = DeltaTable(str(path)).version()
    with pytest.raises(JsonEraBronzeError) as refused:
        BronzeWriter(path, "app")
    message = str(refused.value)
    assert "\n" not in message and "it was landed before native types" in message
    assert "run `ingest bronze migrate-native-types`" in message
    assert DeltaTable(str(path)).version() == version, "the refusal changes nothing"

    migrate(path, _Registry(), "app")
    writer = BronzeWriter(path, "app")
    later = matches(1, 6, seed=9)
    decoded = _decoded(1, later, writer.columns())
    assert decoded.dead_letters == []
    for row, m in zip(decoded.table.to_pylist(), later, strict=True):
        assert comparable(row) == expected(m)
    _land(writer, decoded)


def _reader(tables_dir: Path, name: str, mark: int, columns: tuple[str, ...] = ("event_id",)) -> Path:
    """A silver table as dbt leaves it: its own columns and its bronze mark as a table property."""
    from deltalake import write_deltalake

    schema, table_name = name.split(".")
    path = tables_dir / f"{schema}.db" / table_name
    write_deltalake(str(path), pa.table({c: pa.array(["x"], pa.string()) for c in columns}))
    DeltaTable(str(path)).alter.set_table_properties(
        {"gamelake.bronze_version": str(mark), "gamelake.bronze_marked_at": "2026-11-24 00:00:00"},
        raise_if_not_exists=False,
    )
    return path


def test_readers_must_have_read_bronze_to_its_end_and_their_marks_move_past_the_rewrite(
    tmp_path: Path,
) -> None:
    path, tables = tmp_path / "bronze", tmp_path / "spark"
    _old_bronze(path, matches(1, 20, seed=3))
    version = DeltaTable(str(path)).version()
    _reader(tables, "silver.silver_alpha", version)
    behind = _reader(tables, "silver.silver_quarantine", version - 1)

    with pytest.raises(MigrationError, match=r"silver.silver_quarantine has read bronze up to version \d+"):
        migrate(path, _Registry(), "app", tables_dir=tables)
    assert DeltaTable(str(path)).version() == version, "nothing changed"

    DeltaTable(str(behind)).alter.set_table_properties(
        {"gamelake.bronze_version": str(version)}, raise_if_not_exists=False
    )
    summary = migrate(path, _Registry(), "app", tables_dir=tables)
    final = DeltaTable(str(path)).version()
    assert summary["reader_marks_moved"] == {"silver.silver_alpha": final, "silver.silver_quarantine": final}
    for table in ("silver_alpha", "silver_quarantine"):
        marks = DeltaTable(str(tables / "silver.db" / table)).metadata().configuration
        assert marks["gamelake.bronze_version"] == str(final)


def test_a_reader_holding_a_converted_column_but_no_schema_id_stops_the_rewrite(tmp_path: Path) -> None:
    path, tables = tmp_path / "bronze", tmp_path / "spark"
    _old_bronze(path, matches(1, 20, seed=3))
    version = DeltaTable(str(path)).version()
    _reader(tables, "silver.silver_alpha", version, ("event_id", "loadout"))

    with pytest.raises(MigrationError, match=r"silver\.silver_alpha holds loadout but no schema_id column"):
        migrate(path, _Registry(), "app", tables_dir=tables)
    assert DeltaTable(str(path)).version() == version


def test_a_migration_killed_before_it_marked_bronze_native_is_refused_until_a_rerun_finishes_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from deltalake import write_deltalake

    from ingest.ops.migrations import json_text_marker

    path = tmp_path / "bronze"
    write_deltalake(str(path), _old_table(matches(1, 12, seed=7)), partition_by=["event_date"])

    def killed(table):
        raise KeyboardInterrupt  # after bronze's rewrite committed, before bronze said so

    monkeypatch.setattr(json_text_marker, "mark_typed", killed)
    with pytest.raises(KeyboardInterrupt):
        migrate(path, _Registry(), "app")
    monkeypatch.undo()
    rewritten = DeltaTable(str(path))
    assert pa.schema(rewritten.schema().to_arrow()).field("loadout").type != pa.string(), "rewritten"
    with pytest.raises(JsonEraBronzeError, match="migrate-native-types"):
        BronzeWriter(path, "app")  # a StringValue would land '"abc"' beside converted 'abc' otherwise

    assert migrate(path, _Registry(), "app")["rows_rewritten"] == 0
    assert DeltaTable(str(path)).metadata().configuration[JSON_ERA_COLUMNS] == "[]"
    guard = BronzeWriter(path, "app").columns()
    later = matches(1, 6, seed=9)
    for row, m in zip(_decoded(1, later, guard).table.to_pylist(), later, strict=True):
        assert comparable(row) == expected(m)
