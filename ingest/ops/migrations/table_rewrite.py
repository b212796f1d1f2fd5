"""Rewrite a Delta table file by file into new column types, in one overwrite commit.

What ``ingest bronze migrate-native-types`` does to bronze and to the silver tables that hold
bronze's JSON text: each old file is read batch by batch, converted, and written as one new
file of the same ``event_date`` partition; one commit then replaces every old file with the new
ones and sets the new schema. Until that commit nothing is visible: a failure removes the files
written so far and leaves the table as it was.

delta-rs 1.6.6 derives the removal of the old files itself in an overwrite (the only commit that
may change a column's type) and marks it as a data change, while the new files are marked as
none: a change data feed reader that reads the rewrite's version sees every old row deleted and
none inserted, so a job that rewrites a table moves its readers' marks past the rewrite.
"""

from __future__ import annotations

import time
import urllib.parse
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq
from deltalake import CommitProperties, DeltaTable, PostCommitHookProperties, Transaction
from deltalake.exceptions import CommitFailedError
from deltalake.transaction import AddAction

from ingest.landing.decode.bronze_columns import PARTITION_COLUMN
from ingest.landing.delta.table_location import TableLocation
from ingest.landing.delta.tables import write_part
from ingest.ops.migrations.data_files import open_data_file, remove_data_files
from ingest.ops.migrations.json_text_plan import MigrationError

BATCH_ROWS = 20_000  # rows rebuilt at once: their Python messages are the migration's memory
JOB = "migrate-native-types"  # in the commitInfo, for whoever reads the history
JOB_KEY = "gamelake.job"
HISTORY_SEARCHED = 100  # commits back a rerun looks for the job's own rewrite

Progress = Callable[[int, int], None]  # (rows done, rows to do)
Convert = Callable[[pa.Table], pa.Table]  # one batch of an old file -> its rows in the new schema


@dataclass(frozen=True)
class TableFile:
    path: str  # relative to the table, as the log names it
    rows: int
    date: str | None  # the event_date partition value, as Delta writes it


@dataclass
class Staged:
    """A table's new files, written and not committed, with its new schema and what was done."""

    root: TableLocation
    table: DeltaTable
    adds: list[AddAction]
    schema: pa.Schema
    summary: dict[str, Any] = field(default_factory=dict)


class Tally:
    """Rows done across every table a job rewrites, reported to ``progress``."""

    def __init__(self, total: int, progress: Progress | None) -> None:
        self.total, self.done = total, 0
        self.progress = progress or (lambda done, total: None)

    def add(self, rows: int) -> None:
        self.done += rows
        self.progress(self.done, self.total)


def table_files(table: DeltaTable) -> list[TableFile]:
    """Every file of ``table``'s current version, which must be partitioned by event_date alone."""
    if table.metadata().partition_columns != [PARTITION_COLUMN]:
        raise MigrationError(
            f"{table.table_uri} is partitioned by {table.metadata().partition_columns}, not "
            f"[{PARTITION_COLUMN!r}] as gamelake's tables are; nothing was changed"
        )
    actions = pa.table(table.get_add_actions(flatten=True))
    dates = actions[f"partition.{PARTITION_COLUMN}"].cast(pa.string()).to_pylist()
    rows = pc.fill_null(actions["num_records"], 0).to_pylist()
    paths = [urllib.parse.unquote(p) for p in actions["path"].to_pylist()]
    return [TableFile(p, n, d) for p, n, d in zip(paths, rows, dates, strict=True)]


def rewrite_files(
    root: TableLocation, files: list[TableFile], convert: Convert, tally: Tally, dry_run: bool
) -> list[AddAction]:
    """A new file per old file (none when ``dry_run``); on any failure the new files are removed
    before raising. Timestamps Spark wrote as INT96 are read in microseconds, as Delta keeps them."""
    adds: list[AddAction] = []
    try:
        for file in files:
            parts = []
            source = pq.ParquetFile(open_data_file(root, file.path), coerce_int96_timestamp_unit="us")
            for batch in source.iter_batches(batch_size=BATCH_ROWS):
                parts.append(convert(pa.Table.from_batches([batch])))
                tally.add(batch.num_rows)
            if not dry_run and parts:
                data = pa.concat_tables(parts)
                adds.append(write_part(root, file.date, data, int(time.time() * 1000), data_change=False))
    except BaseException:
        remove(root, adds)
        raise
    return adds


def commit_rewrite(staged: Staged, txns: list[Transaction], writers: str) -> int:
    """One commit: the staged files replace every old one, with the new schema and ``txns``
    restated. ``writers`` says who else may write the table, for the error when one did meanwhile."""
    root, table, adds, schema = staged.root, staged.table, staged.adds, staged.schema
    try:
        table.create_write_transaction(
            list(adds),
            "overwrite",
            schema,
            partition_by=[PARTITION_COLUMN],
            commit_properties=CommitProperties(
                custom_metadata={JOB_KEY: JOB},
                max_commit_retries=0,
                app_transactions=txns,
            ),
            post_commithook_properties=PostCommitHookProperties(
                create_checkpoint=False, cleanup_expired_logs=False
            ),
        )
    except CommitFailedError as err:
        remove(root, adds)
        raise MigrationError(
            f"{table.table_uri} changed while it was being migrated (is {writers} stopped?): {err}; "
            "that table was not changed, run the migration again once nothing else writes to it"
        ) from None
    staged.adds = []  # committed: the table's now, never to be removed on a later failure
    table.update_incremental()
    moved = [t.app_id for t in txns if table.transaction_version(t.app_id) != t.version]
    if moved:
        raise MigrationError(f"the offsets of {', '.join(moved)} changed in the migration's commit")
    return table.version()


def rewrite_version(table: DeltaTable) -> int | None:
    """The version of this job's latest rewrite of ``table`` among its recent commits, if any."""
    for commit in table.history(HISTORY_SEARCHED):
        if commit.get(JOB_KEY) == JOB:
            return int(commit["version"])
    return None


def remove_uncommitted(staged: Staged) -> None:
    """Remove the staged files that the table's newest version does not reference. After a
    failure other than a refused commit (an interrupt as the commit returns) the commit may have
    landed: its files are then the table's, and removing them would break it."""
    if not staged.adds:
        return
    live = set(staged.root.delta_table().get_add_actions(flatten=True).column("path").to_pylist())
    remove(staged.root, [add for add in staged.adds if add.path not in live])


def remove(root: TableLocation, adds: list[AddAction]) -> None:
    remove_data_files(root, [add.path for add in adds])
