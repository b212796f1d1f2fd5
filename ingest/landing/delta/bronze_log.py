"""What a writer of bronze knows of its log, and how it commits the next version.

The state (``LogState``) is read from ``_delta_log`` without the table's files. On a local disk
the next version is a blind append written by ``LocalDeltaLog``; schema and property changes,
and commits to a table with features a blind append does not honour, go through a delta-rs
handle, held only while it is needed. On S3 the blind append is ``ObjectDeltaLog``'s, one
conditional put (``If-None-Match: *``) of the version's file.
"""

from __future__ import annotations

import time
from collections.abc import Sequence

from deltalake import CommitProperties, DeltaTable, PostCommitHookProperties, Transaction
from deltalake.exceptions import CommitFailedError
from deltalake.transaction import AddAction

from ingest.landing.decode.bronze_columns import PARTITION_COLUMN
from ingest.landing.delta.kept_table import KeptTable
from ingest.landing.delta.local_delta_log import LocalDeltaLog, why_not
from ingest.landing.delta.log_state import LogState
from ingest.landing.delta.object_delta_log import ObjectDeltaLog
from ingest.landing.delta.table_location import TableLocation
from ingest.landing.delta.table_properties import with_properties

_CLEANUP_CHECK_EVERY_S = 60.0


class BronzeLog:
    def __init__(self, location: TableLocation) -> None:
        self.location = location
        self.path = location.uri
        self.delta_log: LocalDeltaLog | ObjectDeltaLog = (
            LocalDeltaLog(location.local_path) if location.is_local else ObjectDeltaLog(location)
        )
        self._handle: KeptTable | None = None  # held only while commits go through delta-rs
        self._looked_at = time.monotonic()  # before the load: when no next version was seen
        self.state = LogState.load(location)
        self.not_blind = self._why_not_blind()

    def _why_not_blind(self) -> str | None:
        return why_not(self.state) or self.delta_log.refused

    def latest(self) -> LogState:
        """The state at the newest version: a look at the next version's name, and when the log
        cleanup may have removed commits this writer never read (a writer idle past the
        retention), a ``stat`` of ``_last_checkpoint``. The commits after the state first, then
        that check: in that order, one removed while ``advance`` read those before it is caught
        too, and no blind append can take a cleaned-up version's name."""
        looking_at = time.monotonic()
        moved = self.state.advance()
        if self._unread_commits_may_be_gone(looking_at) and self.state.behind_checkpoint():
            self.state = LogState.load(self.location)
            moved = True
        self._looked_at = looking_at
        if moved:
            self.not_blind = self._why_not_blind()
        return self.state

    def _unread_commits_may_be_gone(self, now: float) -> bool:
        """Every commit this writer has not read came after its last look, which found no next
        version, and the cleanup removes only commits older than the log retention. So for a
        while after that look none can be gone, and the ``stat`` (a HEAD on S3, one of three
        requests a commit) is spared: for half the retention this writer knows (room for clocks
        that differ between hosts), and at most a minute, in case someone else shortened the
        retention in a commit this writer has not read. The service's retention is 1 hour at
        the least."""
        return now - self._looked_at >= min(self.state.log_retention_s() / 2, _CLEANUP_CHECK_EVERY_S)

    def delta_rs(self) -> DeltaTable:
        """A delta-rs handle at the newest version, for what only delta-rs does: schema and
        property changes, and commits to a table with features a blind append does not honour.
        It holds the table's files, so a blind append lets it go (``commit_next``).

        Callers look at the log first (``latest``); a handle already at that version is not read
        again, which on S3 saves a listing and the commits' GETs per batch."""
        if self._handle is None:
            self._handle = KeptTable(self.location)
            return self._handle.table
        table = self._handle.table
        if table.version() != self.state.version:
            table.update_incremental()
        return table

    def set_properties(self, properties: dict[str, str]) -> None:
        current = self.latest().configuration
        if any(current.get(key) != value for key, value in properties.items()):
            with_properties(self.delta_rs(), properties)
            self.latest()

    def commit_next(
        self, adds: Sequence[AddAction], txns: list[Transaction], metadata: dict[str, str]
    ) -> int | None:
        """Commit as the version after the newest we know; None when another writer took it."""
        version = self.state.version + 1
        if self.not_blind is None:
            self._handle = None
            if self.delta_log.append(version, adds, txns, metadata, [PARTITION_COLUMN]):
                self.state.committed(version, {t.app_id: t.version for t in txns})
                return version
            self.not_blind = self.delta_log.refused  # why_not held: only a refused link is new
            return None
        table = self.delta_rs()
        if table.version() != self.state.version:
            return None  # a commit by someone else since the offsets were checked
        try:
            table.create_write_transaction(
                list(adds),
                "append",
                table.schema(),
                partition_by=[PARTITION_COLUMN],
                commit_properties=CommitProperties(
                    custom_metadata=metadata, max_commit_retries=0, app_transactions=txns
                ),
                post_commithook_properties=PostCommitHookProperties(
                    create_checkpoint=False, cleanup_expired_logs=False
                ),
            )
        except CommitFailedError:
            return None
        # The handle stood at the state's version and may not retry: the commit is ``version``,
        # with these app transactions and nothing else that the state keeps.
        self.state.committed(version, {t.app_id: t.version for t in txns})
        return version
