"""Rewrite a bronze that holds JSON text columns into native types, with the silver tables that
pass that text through.

Every file of bronze is converted (json_text_convert.py) and bronze rewritten in one commit
(table_rewrite.py). Nothing else changes: every row, every other column (``_ingested_at`` too),
the table properties, and the app transactions that hold each Kafka partition's offset (restated
in the commit, and checked after it).

Run it with the service stopped: the commit is refused if anything else committed since the
migration read bronze. Order, so that a crash anywhere leaves something a rerun finishes: each
silver table that holds a converted column is rewritten first, one commit each
(silver_rewrite.py), with its gold tables' marks moved past it; then bronze; then the readers'
bronze marks move past bronze's rewrite. A rerun skips the silver tables already native, and
moves the marks that a crash left behind a rewrite. dbt's build lock is held throughout, so no
build reads bronze's text into a silver table that is native already, and so is bronze's
compaction lock, so that no OPTIMIZE brings old files back (kept_lock.py). Both hold across
hosts when the tables are on S3.
"""

from __future__ import annotations

import contextlib
from pathlib import Path
from typing import Any

import pyarrow as pa
from deltalake import DeltaTable, Transaction

from ingest.core.contract import Contract, load_contract
from ingest.core.errors import ConfigError
from ingest.landing.decode.bronze_columns import PARTITION_COLUMN, type_name
from ingest.landing.delta.table_location import TableLocation, as_location
from ingest.landing.records import TopicPartition, txn_app_id
from ingest.landing.upkeep.compaction import compaction_lock
from ingest.ops.dbt_build_lock import BuildLockHeld, holding_build_lock
from ingest.ops.migrations import json_text_marker
from ingest.ops.migrations.json_text_convert import convert
from ingest.ops.migrations.json_text_plan import MigrationError, MigrationPlan, SchemaLookup, plan_migration
from ingest.ops.migrations.kept_lock import KeptLock
from ingest.ops.migrations.reader_marks import Reader, move_marks, readers, readers_behind, repair_marks
from ingest.ops.migrations.silver_rewrite import (
    SilverRewrite,
    commit_silver,
    convert_silver,
    reader_types,
    repair_gold_marks,
    silver_rewrites,
)
from ingest.ops.migrations.table_rewrite import (
    JOB,
    Progress,
    Staged,
    TableFile,
    Tally,
    commit_rewrite,
    remove,
    remove_uncommitted,
    rewrite_files,
    rewrite_version,
    table_files,
)


def migrate(
    path: Path | str | TableLocation,
    registry: SchemaLookup,
    app_id: str,
    progress: Progress | None = None,
    dry_run: bool = False,
    tables_dir: Path | str | TableLocation | None = None,
) -> dict[str, Any]:
    """Convert bronze's JSON text columns, and silver's copies of them, to native types; returns
    the summary.

    ``path`` and ``tables_dir`` are local folders or ``s3://`` locations (``TableLocation``).
    ``dry_run`` converts every row (so a text that cannot be read back is found) and writes nothing.
    ``tables_dir``: where dbt's tables live (``<schema>.db/<table>``). Each reader of bronze
    (reader_marks.py) must have read bronze up to its current version, and each gold table its
    silver table; their marks move past the rewrites.
    """
    bronze = as_location(path)
    tables = as_location(tables_dir) if tables_dir is not None else None
    if not bronze.is_delta_table():
        raise ConfigError(
            f"there is no bronze table at {bronze}: check warehouse_dir or warehouse_uri; nothing to migrate"
        )
    with compaction_lock(bronze) as locked:
        if not locked:
            raise MigrationError("a compaction of bronze is running: stop the service, then run this again")
        try:
            with holding_build_lock(tables, JOB) if tables is not None else contextlib.nullcontext():
                return _migrate(bronze, registry, app_id, KeptLock(locked), progress, dry_run, tables)
        except BuildLockHeld as held:
            raise MigrationError(str(held)) from None


def _migrate(
    bronze: TableLocation,
    registry: SchemaLookup,
    app_id: str,
    lock: KeptLock,
    progress: Progress | None,
    dry_run: bool,
    tables_dir: TableLocation | None,
) -> dict[str, Any]:
    table = bronze.delta_table()
    found = readers(tables_dir) if tables_dir is not None else []
    repaired = {} if dry_run else _repair(bronze, table, found, tables_dir)
    if repaired:
        found = readers(tables_dir) if tables_dir is not None else []
    contract = load_contract()
    plan = plan_migration(table, registry, reader_types(found, contract))
    summary = {**_summary(table, plan), **({"marks_repaired": repaired} if repaired else {})}
    if not plan:
        if not dry_run:
            json_text_marker.mark_typed(table)  # a rerun after a crash before it, or a table left over
        return {**summary, "rows_rewritten": 0, "note": "no JSON text column to convert"}
    behind = readers_behind(found, table.version())
    if behind:
        raise MigrationError(
            f"bronze is at version {table.version()} but {'; '.join(behind)}: bring every reader up to "
            "date first (`ingest refresh`, with the service stopped), then migrate; nothing was changed"
        )
    silver = silver_rewrites(found, plan, contract, tables_dir) if tables_dir is not None else []
    files = table_files(table)
    tally = Tally(sum(f.rows for f in files) + sum(r.rows for r in silver), lock.reporting(progress))
    staged = _stage(bronze, table, files, plan, silver, contract, tally, dry_run)
    summary["silver"] = {r.reader.name: s.summary for r, s in zip(silver, staged[:-1], strict=True)}
    summary["rows_rewritten"] = sum(f.rows for f in files)
    summary["files_rewritten"] = len(files)
    if dry_run:
        return {**summary, "dry_run": True}
    summary.update(_commit_all(table, app_id, lock, silver, staged, summary["silver"]))
    json_text_marker.mark_typed(table)
    move_marks(found, table.version())
    summary["reader_marks_moved"] = {r.name: table.version() for r in found}
    return summary


def _stage(
    bronze: TableLocation,
    table: DeltaTable,
    files: list[TableFile],
    plan: MigrationPlan,
    silver: list[SilverRewrite],
    contract: Contract,
    tally: Tally,
    dry_run: bool,
) -> list[Staged]:
    """Every new file, of each silver table and then of bronze (last), before anything commits:
    a text that cannot be read back stops the job with no table changed."""
    staged: list[Staged] = []
    try:
        for rewrite in silver:
            staged.append(convert_silver(rewrite, plan, contract, tally, dry_run))
        target = pa.schema([f for f in plan.new_schema if f.name != PARTITION_COLUMN])
        adds = rewrite_files(bronze, files, lambda batch: convert(batch, plan, target), tally, dry_run)
    except BaseException:
        for done in staged:
            remove(done.root, done.adds)
        raise
    return [*staged, Staged(bronze, table, adds, plan.new_schema)]


def _commit_all(
    table: DeltaTable,
    app_id: str,
    lock: KeptLock,
    silver: list[SilverRewrite],
    staged: list[Staged],
    silver_summary: dict[str, dict[str, Any]],
) -> dict[str, Any]:
    """Each silver table's commit, then bronze's (staged last); what is not committed is removed."""
    try:
        lock.renew()  # a lease for the commits ahead: no compaction may follow bronze's
        _refuse_if_bronze_moved(table)
        for rewrite, done in zip(silver, staged[:-1], strict=True):
            silver_summary[rewrite.reader.name].update(commit_silver(rewrite, done))
        txns = app_transactions(table, app_id)
        version = commit_rewrite(staged[-1], txns, "the ingest service")
    except BaseException:
        for done in staged:
            remove_uncommitted(done)
        raise
    return {"version": version, "app_transactions_kept": len(txns)}


def _refuse_if_bronze_moved(table: DeltaTable) -> None:
    """Bronze as it was read: a silver table converted while the service lands text would stop
    every dbt build until bronze is converted too."""
    read = table.version()
    table.update_incremental()
    if table.version() != read:
        raise MigrationError(
            f"bronze moved from version {read} to {table.version()} while it was being migrated: stop "
            "the service, bring every table up to date (`ingest refresh`), then run this again; "
            "nothing was changed"
        )


def _repair(
    bronze: TableLocation, table: DeltaTable, found: list[Reader], tables_dir: TableLocation | None
) -> dict[str, int]:
    """What a crashed run left undone after its rewrites: readers' marks behind them (moved past
    them). Bronze's mark of native types follows once nothing is left to convert."""
    gold = repair_gold_marks(found, tables_dir) if tables_dir is not None else {}
    return {**gold, **repair_marks(found, bronze, rewrite_version(table))}


def _summary(table: DeltaTable, plan: MigrationPlan) -> dict[str, Any]:
    return {
        "bronze": table.table_uri,
        "from_version": table.version(),
        "columns_converted": {name: type_name(plan.new_types[name]) for name in plan.converted},
        "columns_added": {name: plan.uncomputed_cases.get(name, "computed") for name in plan.added},
        "not_converted": plan.left,
    }


def app_transactions(table: DeltaTable, app_id: str) -> list[Transaction]:
    """The stored offset of every Kafka partition bronze holds rows of, under ``app_id``."""
    found = table.to_pyarrow_dataset().to_table(columns=["_kafka_topic", "_kafka_partition"])
    pairs = found.group_by(["_kafka_topic", "_kafka_partition"]).aggregate([]).to_pylist()
    txns = []
    for pair in pairs:
        tp = TopicPartition(pair["_kafka_topic"], pair["_kafka_partition"])
        version = table.transaction_version(txn_app_id(app_id, tp))
        if version is not None:
            txns.append(Transaction(txn_app_id(app_id, tp), version))
    return txns
