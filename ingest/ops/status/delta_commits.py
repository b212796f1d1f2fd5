"""How far a reader trails a Delta table: the age of the first commit after its mark that added rows.

A reader's mark is the last version of the table it has read (silver's gamelake.bronze_version,
gold's largest silver_version). Commits that add no rows do not make it stale: OPTIMIZE,
VACUUM, SET TBLPROPERTIES (silver's own mark), ADD COLUMNS, CREATE TABLE. The rule, from each
commit's commitInfo: the operation is one that inserts rows, and where the commit counts its
rows (Spark's numOutputRows, MERGE's inserted and updated target rows, delta-rs's
num_added_rows, the ingest's ``gamelake.rows``) the count is above zero. So a batch that only
dead-lettered, which moves bronze's offsets but adds no rows, does not make silver stale.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from deltalake import DeltaTable

from ingest.landing.decode.bronze_columns import ROWS_KEY

ROW_OPERATIONS = frozenset(
    {
        "WRITE",
        "MERGE",
        "STREAMING UPDATE",
        "CREATE TABLE AS SELECT",
        "REPLACE TABLE AS SELECT",
        "CREATE OR REPLACE TABLE AS SELECT",
    }
)
# A MERGE's numOutputRows also counts the unchanged rows it copied: count what it inserted or changed.
_MERGE_ROW_METRICS = (
    "numTargetRowsInserted",
    "numTargetRowsUpdated",
    "num_target_rows_inserted",
    "num_target_rows_updated",
)
_WRITE_ROW_METRICS = ("numOutputRows", "num_added_rows")
# At about 1 ms a commit, the newest this many commits are read; a reader further behind is
# reported as trailing by at least the age of the oldest of them.
WINDOW = 5_000


def adds_rows(commit_info: dict[str, Any]) -> bool:
    if commit_info.get("operation") not in ROW_OPERATIONS:
        return False
    if ROWS_KEY in commit_info:
        return int(commit_info[ROWS_KEY]) > 0
    metrics = commit_info.get("operationMetrics") or {}
    for keys in (_MERGE_ROW_METRICS, _WRITE_ROW_METRICS):
        counted = [int(metrics[key]) for key in keys if key in metrics]
        if counted:
            return sum(counted) > 0
    return True


@dataclass(frozen=True)
class Commit:
    version: int
    at_s: float
    adds_rows: bool


@dataclass(frozen=True)
class Trail:
    """How far a reader trails: ``seconds`` 0 when it read everything; ``exact`` False for a lower bound."""

    seconds: float
    exact: bool


@dataclass(frozen=True)
class History:
    """The commits of a table after some version, oldest first, and the table's current version."""

    commits: tuple[Commit, ...]
    current: int

    def trail(self, mark: int | None, now: float) -> Trail:
        """How far a reader at ``mark`` (None: read nothing yet) trails this table at ``now``."""
        after = -1 if mark is None else mark
        if after >= self.current:
            return Trail(0.0, True)
        # the commits right after the mark are missing: beyond WINDOW or the log's retention
        exact = bool(self.commits) and self.commits[0].version <= after + 1
        unread = [c for c in self.commits if c.version > after and c.adds_rows]
        if not exact and self.commits:
            return Trail(now - self.commits[0].at_s, False)
        return Trail(now - unread[0].at_s if unread else 0.0, exact)


def read_history(table: DeltaTable, after: int | None) -> History:
    """The commits of ``table`` after version ``after`` (None: all), at most the newest WINDOW."""
    current = table.version()
    newer = current - (-1 if after is None else after)
    infos = table.history(min(newer, WINDOW)) if newer > 0 else []
    commits = (Commit(info["version"], info["timestamp"] / 1000, adds_rows(info)) for info in infos)
    return History(tuple(sorted(commits, key=lambda c: c.version)), current)
