"""The silver tables that hold columns bronze's migration converts, converted with it.

Staging passes bronze's field columns through (macros/bronze/stage_bronze_events.sql), so a
silver table built while bronze held JSON text holds that text, under the name staging gives it
(the field's own, or passthrough_prefix + it). Such a table could not take the native column
once bronze has it, so the migration rewrites it too, with the same plan (table_rewrite.py). Its
rows are renamed to bronze's names for what the conversion reads (schema id, message type,
Kafka coordinates) and for the converted columns, converted, and named back; every other column
is kept as it is.

Gold reads its silver table's change feed after its mark (gold_marks.py). So each gold table
must have read every insert before the rewrite, and its mark moves to the rewrite's version
after it. A crash between that commit and the mark's move is repaired by the next run, which
finds the rewrite in silver's history.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import pyarrow as pa

from ingest.core.contract import Contract
from ingest.games.layout import silver_table
from ingest.landing.decode.bronze_columns import PARTITION_COLUMN, type_name
from ingest.landing.delta.table_location import TableLocation
from ingest.ops.gold_marks import GoldReader, gold_readers, move_gold_mark
from ingest.ops.migrations.json_text_convert import convert
from ingest.ops.migrations.json_text_plan import MigrationError, MigrationPlan, TypeKey
from ingest.ops.migrations.reader_marks import Reader, has_read_all, inserting_versions
from ingest.ops.migrations.table_rewrite import (
    Convert,
    Staged,
    TableFile,
    Tally,
    commit_rewrite,
    rewrite_files,
    rewrite_version,
    table_files,
)

# Bronze's columns the conversion reads besides the converted ones; staging renames them.
KEY_COLUMNS = ("_schema_id", "_message_type", "_kafka_topic", "_kafka_partition", "_kafka_offset")


@dataclass(frozen=True)
class SilverRewrite:
    reader: Reader
    columns: dict[str, str]  # its column -> the bronze column it passes through, for each converted
    golds: list[GoldReader]
    files: list[TableFile]  # listed once: for the progress total, then for the rewrite

    @property
    def rows(self) -> int:
        return sum(f.rows for f in self.files)


def silver_rewrites(
    found: list[Reader], plan: MigrationPlan, contract: Contract, tables_dir: TableLocation
) -> list[SilverRewrite]:
    """Each reader of bronze that holds a converted column as text. Refuses, before anything is
    written, when one lacks the columns the conversion reads, or a gold table has not read it all."""
    rewrites = []
    for reader in found:
        columns = _held(reader, plan, contract)
        if not columns:
            continue
        schema_id = _staging_name(contract, "_schema_id")
        if schema_id not in reader.columns:
            raise MigrationError(
                f"{reader.name} holds {', '.join(sorted(columns))} but no {schema_id} column, so the "
                "schema of its rows cannot be known; nothing was changed"
            )
        slug = _slug(reader)
        golds = gold_readers(tables_dir, slug) if slug else []
        _refuse_unless_read(reader, golds)
        rewrites.append(SilverRewrite(reader, columns, golds, table_files(reader.table)))
    return rewrites


def reader_types(found: list[Reader], contract: Contract) -> set[TypeKey]:
    """Each (schema id, message type) of the rows of the readers that hold a schema id."""
    schema_id, message_type = (_staging_name(contract, c) for c in ("_schema_id", "_message_type"))
    keys: set[TypeKey] = set()
    for reader in found:
        if schema_id not in reader.columns:
            continue
        names = [schema_id] + ([message_type] if message_type in reader.columns else [])
        rows = reader.table.to_pyarrow_dataset().to_table(columns=names).group_by(names).aggregate([])
        types = rows[message_type].to_pylist() if message_type in names else [None] * rows.num_rows
        keys.update((i, t) for i, t in zip(rows[schema_id].to_pylist(), types, strict=True) if i is not None)
    return keys


def convert_silver(
    rewrite: SilverRewrite, plan: MigrationPlan, contract: Contract, tally: Tally, dry_run: bool
) -> Staged:
    """One silver table's new files (none when ``dry_run``), not committed yet."""
    table, location = rewrite.reader.table, rewrite.reader.location
    old = pa.schema(table.schema().to_arrow())
    converted = {name: plan.new_types[bronze] for name, bronze in rewrite.columns.items()}
    new_schema = pa.schema([pa.field(f.name, converted[f.name]) if f.name in converted else f for f in old])
    target = pa.schema([f for f in new_schema if f.name != PARTITION_COLUMN])
    files = rewrite.files
    adds = rewrite_files(location, files, _converter(rewrite, plan, contract, target), tally, dry_run)
    summary = {
        "rows_rewritten": sum(f.rows for f in files),
        "columns_converted": {name: type_name(t) for name, t in converted.items()},
    }
    return Staged(location, table, adds, new_schema, summary)


def commit_silver(rewrite: SilverRewrite, staged: Staged) -> dict[str, Any]:
    """Commit a silver table's new files; then its gold tables have read up to that commit."""
    version = commit_rewrite(staged, [], "every dbt build")
    return {"version": version, "gold_marks_moved": move_past(rewrite.reader, rewrite.golds, version)}


def repair_gold_marks(found: list[Reader], tables_dir: TableLocation) -> dict[str, int]:
    """The gold marks a crashed run left before its rewrite of a silver table, moved past it."""
    moved: dict[str, int] = {}
    for reader in found:
        slug = _slug(reader)
        version = rewrite_version(reader.table) if slug else None
        if slug and version is not None:
            moved.update(move_past(reader, gold_readers(tables_dir, slug), version))
    return moved


def move_past(reader: Reader, golds: list[GoldReader], version: int) -> dict[str, int]:
    """Each gold table that has read every insert of ``reader`` before ``version`` has read up to it."""
    moved = {}
    for gold in golds:
        if (
            gold.mark is not None
            and gold.mark < version
            and has_read_all(reader.location, gold.mark, version - 1)
        ):
            move_gold_mark(gold, version)
            moved[gold.name] = version
    return moved


def _held(reader: Reader, plan: MigrationPlan, contract: Contract) -> dict[str, str]:
    """The converted bronze columns ``reader`` holds as text, by the name staging gave them. None
    when each of them stays a string (StringValue): as in bronze, old text and new cannot be told
    apart, and a table converted already (by a run that crashed before bronze's commit) holds them."""
    schema = pa.schema(reader.table.schema().to_arrow())
    held = {}
    for bronze in plan.converted:
        name = contract.passthrough_name(bronze)
        if name in schema.names and pa.types.is_string(schema.field(name).type):
            held[name] = bronze
    return held if any(not pa.types.is_string(plan.new_types[b]) for b in held.values()) else {}


def _refuse_unless_read(reader: Reader, golds: list[GoldReader]) -> None:
    current = reader.table.version()
    for gold in golds:
        if gold.mark is None:
            continue  # it recomputes from a silver snapshot at its next build
        try:
            unread = inserting_versions(reader.location, gold.mark, current)
        except FileNotFoundError as err:
            unread, why = [-1], f" ({err})"
        else:
            why = ""
        if unread:
            raise MigrationError(
                f"{gold.name} has read {reader.name} up to version {gold.mark}, not {current}{why}: "
                "bring every table up to date first (`ingest refresh`, with the service stopped), "
                "then migrate; nothing was changed"
            )


def _converter(rewrite: SilverRewrite, plan: MigrationPlan, contract: Contract, target: pa.Schema) -> Convert:
    """One batch of a silver file -> ``target``: converted where the table holds bronze's text."""
    renames = {_staging_name(contract, c): c for c in KEY_COLUMNS} | rewrite.columns
    native_target = pa.schema([pa.field(b, plan.new_types[b]) for b in rewrite.columns.values()])

    def to_target(batch: pa.Table) -> pa.Table:
        as_bronze = {bronze: batch[name] for name, bronze in renames.items() if name in batch.column_names}
        as_bronze.setdefault("_message_type", pa.nulls(batch.num_rows, pa.string()))
        native = convert(pa.table(as_bronze), plan, native_target)
        arrays = []
        for f in target:
            if f.name in rewrite.columns:
                arrays.append(native[rewrite.columns[f.name]])
            elif f.name in batch.column_names:
                arrays.append(_typed(rewrite.reader.name, batch[f.name], f))
            else:
                arrays.append(pa.nulls(batch.num_rows, f.type))
        return pa.Table.from_arrays(arrays, schema=target)

    return to_target


def _typed(table: str, column: pa.ChunkedArray, field: pa.Field) -> pa.ChunkedArray:
    """``column`` as the table's schema types it (a file may hold another Arrow type of it)."""
    if column.type == field.type:
        return column
    try:
        return column.cast(field.type)
    except (pa.ArrowInvalid, pa.ArrowNotImplementedError) as err:
        raise MigrationError(
            f"column {field.name!r} of {table}: a file holds {column.type}, which cannot be read as the "
            f"table's {type_name(field.type)} ({err}); nothing was changed"
        ) from None


def _staging_name(contract: Contract, bronze: str) -> str:
    return next((c.name for c in contract.columns if c.bronze == bronze), bronze)


def _slug(reader: Reader) -> str | None:
    """The game of a ``silver.silver_<slug>`` table; None for any other reader."""
    schema, table = reader.name.split(".", 1)
    slug = table.removeprefix("silver_")
    return slug if schema == "silver" and table == silver_table(slug) and slug != "quarantine" else None
