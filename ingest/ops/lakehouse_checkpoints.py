"""Checkpoints of the tables a continuous refresh cycle commits to, written by delta-rs in the
cycle's upkeep, a few tables a cycle.

Spark writes a table's checkpoint inside the commit whose version is a multiple of
``delta.checkpointInterval``. A refresh cycle commits to each table it builds once, so with
Spark's default interval (10) the tables of games that receive events together reach those
versions together, and every tenth cycle paid all their checkpoints at once: about 10 s of a
30 s cycle at 5 games. In its commit Spark's checkpoint of such a table costs about 1.5 s,
delta-rs' the same checkpoint 13 ms (bench/results/checkpoint_stagger.md).

So dbt_project.yml raises the interval of silver, gold and the slice to ``SPARK_INTERVAL``,
which is left as the backstop of builds outside the refresh, and the refresh's upkeep
checkpoints a table once ``checkpoint_commits`` commits have followed its last checkpoint: the
furthest behind first, at most ``1 + tables // checkpoint_commits`` a cycle, so tables that
fall due together are spread over the next cycles and stay spread. Each checkpoint is followed by
delta-rs' cleanup of the log files older than the table's ``delta.logRetentionDuration``, which
Spark did after its own checkpoints.

Each statement lists its table's ``_delta_log``: through Hadoop about 15 µs an entry on a local
disk (an INSERT of 100 rows 0.37 s at 4,000 entries, 12.1 s at 400,000), through gamelake's
local log store about 1 µs (native/local-logstore; bench/results/log_listing.md). Delta's
default retention (30 days) would keep 350,000-520,000 entries of a table the refresh commits to
every cycle, so these tables keep ``DEFAULT_LOG_HOURS`` of log (``ingest
refresh --log-hours``), about 4,000 entries. Their readers need less: every ``version as of``
names a version of the cycle, the marks ride in the latest commits, and a gold table whose mark
is older than silver's log recomputes from a pinned snapshot (ingest/ops/gold_marks.py).

A table created before its model's config named these properties keeps the ones it was created
with (dbt sets table properties only when it creates a table): the upkeep sets them once, a
commit that changes no data, which the readers of marks and gold's change feed look past.

A checkpoint adds no data and no commit: the readers' marks and gold's change feed read the
same commits after it. The upkeep holds the build lock, so no build commits to these tables
meanwhile.
"""

from __future__ import annotations

import json
import logging
from dataclasses import dataclass
from typing import Any

from deltalake import DeltaTable
from deltalake.exceptions import DeltaError

from ingest.landing.delta.log_folder import log_folder
from ingest.landing.delta.table_location import TableLocation
from ingest.ops.log_side_files import remove_orphaned
from ingest.ops.stats_columns import STATS_COLUMNS, stats_columns

log = logging.getLogger(__name__)

SPARK_INTERVAL = 1000  # dbt_project.yml and the slice's model config name the same number
INTERVAL = "delta.checkpointInterval"
LOG_RETENTION = "delta.logRetentionDuration"
# how long a checkpoint keeps a replaced file's removal; Delta wants it no longer than the log
TOMBSTONE_RETENTION = "delta.deletedFileRetentionDuration"
DEFAULT_LOG_HOURS = 6  # dbt_project.yml and the slice's model config name the same hours
DEFAULT_CHECKPOINT_COMMITS = 10  # Spark's own default interval


@dataclass(frozen=True)
class Behind:
    table: str  # schema.name
    commits: int  # since its last checkpoint (since its creation when it has none)


def commits_behind(name: str, place: TableLocation, table: DeltaTable) -> Behind:
    """How many commits ``table`` holds after its last checkpoint (``_last_checkpoint``)."""
    text = log_folder(place).read_text("_last_checkpoint")
    last = int(json.loads(text)["version"]) if text else 0
    return Behind(name, table.version() - last)


def checkpoints_per_cycle(tables: int, checkpoint_commits: int) -> int:
    """Enough that tables committing once a cycle are each checkpointed every
    ``checkpoint_commits`` cycles, and at least one."""
    return 1 + tables // max(checkpoint_commits, 1)


def due_checkpoints(behind: list[Behind], checkpoint_commits: int) -> list[str]:
    """The tables to checkpoint this cycle: ``checkpoint_commits`` or more commits behind, the
    furthest first, at most ``checkpoints_per_cycle``."""
    due = sorted((b for b in behind if b.commits >= checkpoint_commits), key=lambda b: (-b.commits, b.table))
    return [b.table for b in due[: checkpoints_per_cycle(len(behind), checkpoint_commits)]]


def checkpoint(name: str, table: DeltaTable, place: TableLocation) -> bool:
    """delta-rs' checkpoint of ``table`` (at ``place``) at its version, then its expired log
    cleaned up, the side files of the versions removed included; False when delta-rs cannot
    (Spark's own checkpoints at ``SPARK_INTERVAL`` remain)."""
    try:
        table.create_checkpoint()
        table.cleanup_metadata()
    except DeltaError as err:
        log.warning("refresh upkeep: no checkpoint of %s: %s", name, err)
        return False
    remove_orphaned(log_folder(place))
    return True


def log_retention(hours: float) -> str:
    """The value of ``LOG_RETENTION`` and ``TOMBSTONE_RETENTION`` for ``hours`` (in minutes when
    not whole: a bench's compressed day)."""
    return f"interval {int(hours)} hours" if hours == int(hours) else f"interval {round(hours * 60)} minutes"


def refresh_table_properties(log_hours: float) -> dict[str, str]:
    """What the upkeep keeps on the tables it checkpoints: ``SPARK_INTERVAL``, and ``log_hours`` of
    log and of removals (the files themselves stay ``--vacuum-hours``: lakehouse_upkeep.py)."""
    hours = log_retention(log_hours)
    return {INTERVAL: str(SPARK_INTERVAL), LOG_RETENTION: hours, TOMBSTONE_RETENTION: hours}


def adopt_properties(spark: Any, name: str, table: DeltaTable, log_hours: float) -> bool:
    """Set ``refresh_table_properties`` and the columns it keeps file statistics on
    (stats_columns.py) on ``table`` (``name``: a validated ``schema.table``) when it holds others,
    in one commit; whether it did."""
    wanted = refresh_table_properties(log_hours)
    columns = stats_columns(name, table.schema().to_arrow().names)
    if columns is not None:
        wanted[STATS_COLUMNS] = columns
    held = table.metadata().configuration
    if all(held.get(key) == value for key, value in wanted.items()):
        return False
    # all of them: Delta checks the log's hours against the removals' named in the same statement
    settings = ", ".join(f"'{key}' = '{value}'" for key, value in wanted.items())
    spark.sql(f"alter table {name} set tblproperties ({settings})")
    table.update_incremental()
    log.info("refresh upkeep: %s now holds %s", name, settings)
    return True
