"""Rewrite a bronze that holds JSON text columns into native types, in one Delta commit.

Every file of bronze is read batch by batch, converted (native_convert.py) and written as a new
file of the same partition; one commit then replaces all the old files with the new ones and
sets the new schema. Nothing else changes: every row, every other column (``_ingested_at``
too), the table properties, and the app transactions that hold each Kafka partition's offset
(restated in the commit, and checked after it). Until that commit nothing is visible: a failure
removes the files written so far and leaves bronze as it was.

Run it with the service stopped: the commit is refused if anything else committed since the
migration read bronze. delta-rs 1.6.6 derives the removal of the old files itself in an
overwrite (the only commit that may change a column's type) and marks it as a data change,
while our new files are marked as none: a change data feed reader that reads the migration's
version sees every old row deleted and none inserted, so silver's readers must be past it.
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq
from deltalake import CommitProperties, DeltaTable, PostCommitHookProperties, Transaction
from deltalake.exceptions import CommitFailedError
from deltalake.transaction import AddAction

from ingest.core.errors import ConfigError
from ingest.landing.bronze_columns import JSON_ERA_COLUMNS, PARTITION_COLUMN, type_name
from ingest.landing.bronze_writer import write_part
from ingest.landing.compaction import compaction_lock
from ingest.landing.offsets import TopicPartition, txn_app_id
from ingest.landing.table_properties import with_properties
from ingest.ops.native_convert import convert
from ingest.ops.native_plan import MigrationError, MigrationPlan, Registry, plan_migration
from ingest.ops.reader_marks import Reader, move_marks, readers, readers_behind, readers_holding

BATCH_ROWS = 20_000  # rows rebuilt at once: their Python messages are the migration's memory
JOB = "migrate-native-types"  # in the commitInfo, for whoever reads the history

Progress = Callable[[int, int], None]  # (rows done, rows in bronze)


@dataclass(frozen=True)
class BronzeFile:
    path: str
    rows: int
    date: str | None  # the event_date partition value, as Delta writes it


def migrate(
    path: Path,
    registry: Registry,
    app_id: str,
    progress: Progress | None = None,
    dry_run: bool = False,
    tables_dir: Path | None = None,
) -> dict[str, Any]:
    """Convert bronze's JSON text columns to native types; returns the summary.

    ``dry_run`` converts every row (so a text that cannot be read back is found) and writes nothing.
    ``tables_dir``: where silver's readers of bronze live (reader_marks.py); each must have read
    bronze up to its current version and hold none of the converted columns, and their marks
    move past the rewrite.
    """
    if not DeltaTable.is_deltatable(str(path)):
        raise ConfigError(f"there is no bronze table at {path}: check warehouse_dir; nothing to migrate")
    with compaction_lock(path) as locked:
        if not locked:
            raise MigrationError("a compaction of bronze is running: stop the service, then run this again")
        table = DeltaTable(str(path))
        plan = plan_migration(table, registry)
        summary = _summary(table, plan)
        if not plan:
            return {**summary, "rows_rewritten": 0, "note": "no JSON text column to convert"}
        found = readers(tables_dir) if tables_dir is not None else []
        _refuse_unless_readers_allow(found, table.version(), plan.converted)
        files = bronze_files(table)
        adds = _rewrite_all(path, files, plan, progress or (lambda done, total: None), dry_run)
        summary["rows_rewritten"] = sum(f.rows for f in files)
        summary["files_rewritten"] = len(files)
        if dry_run:
            return {**summary, "dry_run": True}
        txns = app_transactions(table, app_id)
        summary["version"] = _commit(path, table, adds, plan.new_schema, txns)
        summary["app_transactions_kept"] = len(txns)
        _forget_json_era(table, plan.converted)
        move_marks(found, table.version())
        summary["reader_marks_moved"] = {r.name: table.version() for r in found}
        return summary


def _refuse_unless_readers_allow(found: list[Reader], bronze_version: int, converted: list[str]) -> None:
    behind = readers_behind(found, bronze_version)
    if behind:
        raise MigrationError(
            f"bronze is at version {bronze_version} but {'; '.join(behind)}: bring every reader up to "
            "date first (`ingest refresh`, with the service stopped), then migrate; nothing was changed"
        )
    holding = readers_holding(found, converted)
    if holding:
        raise MigrationError(
            f"{'; '.join(holding)} (passed through from bronze as JSON text): this command converts "
            "bronze only, and such a reader could not take the native type; nothing was changed. "
            "The service keeps landing these columns as JSON text meanwhile (README, Protobuf types)"
        )


def _summary(table: DeltaTable, plan: MigrationPlan) -> dict[str, Any]:
    return {
        "bronze": table.table_uri,
        "from_version": table.version(),
        "columns_converted": {name: type_name(plan.new_types[name]) for name in plan.converted},
        "columns_added": {name: plan.uncomputed_cases.get(name, "computed") for name in plan.added},
        "not_converted": plan.left,
    }


def bronze_files(table: DeltaTable) -> list[BronzeFile]:
    actions = pa.table(table.get_add_actions(flatten=True))
    dates = actions[f"partition.{PARTITION_COLUMN}"].cast(pa.string()).to_pylist()
    rows = pc.fill_null(actions["num_records"], 0).to_pylist()
    return [BronzeFile(p, n, d) for p, n, d in zip(actions["path"].to_pylist(), rows, dates, strict=True)]


def _rewrite_all(
    root: Path, files: list[BronzeFile], plan: MigrationPlan, progress: Progress, dry_run: bool
) -> list[AddAction]:
    """A new file per old file; on any failure the new files are removed before raising."""
    adds: list[AddAction] = []
    total, done = sum(f.rows for f in files), 0
    target = pa.schema([f for f in plan.new_schema if f.name != PARTITION_COLUMN])
    try:
        for file in files:
            parts = []
            for batch in pq.ParquetFile(root / file.path).iter_batches(batch_size=BATCH_ROWS):
                parts.append(convert(pa.Table.from_batches([batch]), plan, target))
                done += batch.num_rows
                progress(done, total)
            if not dry_run and parts:
                data = pa.concat_tables(parts)
                adds.append(write_part(root, file.date, data, int(time.time() * 1000), data_change=False))
    except BaseException:
        _remove(root, adds)
        raise
    return adds


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


def _commit(
    root: Path, table: DeltaTable, adds: list[AddAction], schema: pa.Schema, txns: list[Transaction]
) -> int:
    """One commit: the new files replace every old one, with the new schema and the same offsets."""
    try:
        table.create_write_transaction(
            list(adds),
            "overwrite",
            schema,
            partition_by=[PARTITION_COLUMN],
            commit_properties=CommitProperties(
                custom_metadata={"gamelake.job": JOB}, max_commit_retries=0, app_transactions=txns
            ),
            post_commithook_properties=PostCommitHookProperties(
                create_checkpoint=False, cleanup_expired_logs=False
            ),
        )
    except CommitFailedError as err:
        _remove(root, adds)
        raise MigrationError(
            f"bronze changed while it was being migrated (is the service stopped?): {err}; "
            "nothing was changed, run the migration again once nothing else writes to bronze"
        ) from None
    table.update_incremental()
    moved = [t.app_id for t in txns if table.transaction_version(t.app_id) != t.version]
    if moved:
        raise MigrationError(f"the offsets of {', '.join(moved)} changed in the migration's commit")
    return table.version()


def _forget_json_era(table: DeltaTable, converted: list[str]) -> None:
    """The converted columns no longer hold JSON text: the service lands them natively from now.
    (Were this commit lost, the service still would: it trusts the list only for text columns.)"""
    table.update_incremental()
    held = json.loads(table.metadata().configuration.get(JSON_ERA_COLUMNS, "[]"))
    left = sorted(set(held) - set(converted))
    with_properties(table, {JSON_ERA_COLUMNS: json.dumps(left)})


def _remove(root: Path, adds: list[AddAction]) -> None:
    for add in adds:
        (root / add.path).unlink(missing_ok=True)
