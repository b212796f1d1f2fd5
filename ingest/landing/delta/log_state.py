"""What a writer needs of a Delta table, read from ``_delta_log`` without the table's files.

An append needs only the protocol, the schema and properties, and the app transactions that
fence a commit. ``LogState`` reads just those: three columns of the newest checkpoint, in
batches, then the ``txn``, ``metaData`` and ``protocol`` lines of each commit after it. The
thousands of ``add`` and ``remove`` lines of a compaction commit are skipped unparsed, where a
delta-rs handle, refreshed after each upkeep, replayed them all. What each keeps was measured in
one run (``bench/writer_memory.py``, bench/results/writer_memory.md): 19-25 MB for this state
against 44-45 MB for a handle, with 0 to 100,000 tombstones in the checkpoint.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
from deltalake import Schema

from ingest.core.errors import IngestError
from ingest.landing.delta.log_folder import LogFolder, log_folder
from ingest.landing.delta.table_location import TableLocation

_WANTED = ("txn", "metaData", "protocol")
_WANTED_PREFIXES = tuple(f'{{"{action}"' for action in _WANTED)
_CHECKPOINT_BATCH = 8192  # rows of a checkpoint read at a time
LOG_RETENTION = "delta.logRetentionDuration"
DEFAULT_LOG_RETENTION_S = 30 * 86400.0
_INTERVAL = re.compile(r"(?:interval\s+)?(\d+)\s*(second|minute|hour|day|week)s?")
_UNIT_S = {"second": 1, "minute": 60, "hour": 3600, "day": 86400, "week": 7 * 86400}


class UnreadableLogError(IngestError):
    """The log holds something this reader does not follow (a V2 checkpoint, a missing commit)."""


@dataclass(frozen=True)
class Protocol:
    min_writer_version: int
    writer_features: tuple[str, ...] | None


@dataclass
class LogState:
    """A table's protocol, metadata and app transactions at ``version``."""

    folder: LogFolder
    version: int = -1
    protocol: Protocol = Protocol(0, None)
    configuration: dict[str, str] = field(default_factory=dict)
    schema_string: str = ""
    txns: dict[str, int] = field(default_factory=dict)
    # ``_last_checkpoint``'s identity (inode, size, mtime) and the version it named: read again
    # only when it changes, so a check costs a ``stat`` (a HEAD on S3); BronzeLog checks at most
    # once a minute.
    _pointer: tuple[tuple[object, ...], int] | None = field(default=None, repr=False)

    @classmethod
    def load(cls, table_root: Path | TableLocation) -> LogState:
        """The state at the newest version: the newest checkpoint, then every commit after it."""
        state = cls(log_folder(table_root))
        checkpoint = state._checkpoint_version()
        if checkpoint is not None:
            state._read_checkpoint(checkpoint)
        state.advance()
        if state.version < 0:
            raise UnreadableLogError(f"{state.folder} holds no commit: {table_root} is not a Delta table")
        return state

    def advance(self) -> bool:
        """Apply the commits after ``version``; True when there were any."""
        start = self.version
        while self._read_commit(self.version + 1):
            pass
        return self.version != start

    def committed(self, version: int, txns: dict[str, int]) -> None:
        """Our own append, written as ``version``: only its app transactions change the state."""
        if version != self.version + 1:
            raise IngestError(f"commit {version} does not follow {self.version} in {self.folder}")
        self.version = version
        self.txns.update(txns)

    def behind_checkpoint(self) -> bool:
        """A checkpoint newer than ``version`` with no commit after ``version``: the log cleanup
        removed commits this state never read (it was paused for longer than the retention)."""
        newest = self._checkpoint_version()
        if newest is None or newest <= self.version:
            return False
        return not self.folder.exists(commit_name(self.version + 1))

    def arrow_schema(self) -> pa.Schema:
        return _arrow_schema(self.schema_string)

    def log_retention_s(self) -> float:
        """How old a commit must be before the log cleanup may remove it: the table's
        ``delta.logRetentionDuration`` (Delta's default, 30 days, when unset); 0 when unreadable."""
        text = self.configuration.get(LOG_RETENTION)
        if text is None:
            return DEFAULT_LOG_RETENTION_S
        found = _INTERVAL.fullmatch(text.strip().lower())
        return int(found[1]) * _UNIT_S[found[2]] if found else 0.0

    def _checkpoint_version(self) -> int | None:
        name = "_last_checkpoint"
        try:
            identity = self.folder.identity(name)
            if identity is None:
                return None
            if self._pointer is not None and self._pointer[0] == identity:
                return self._pointer[1]
            text = self.folder.read_text(name)
            if text is None:
                return None
            pointer = json.loads(text)
        except (OSError, ValueError) as err:
            raise UnreadableLogError(f"cannot read {self.folder}/{name}: {err}") from None
        if "v2Checkpoint" in pointer:
            raise UnreadableLogError(f"{self.folder} has a V2 checkpoint, which this writer does not read")
        self._pointer = (identity, int(pointer["version"]))
        return self._pointer[1]

    def _checkpoint_files(self, version: int) -> list[str]:
        single = f"{version:020d}.checkpoint.parquet"
        if self.folder.exists(single):
            return [single]
        parts = self.folder.matching(f"{version:020d}.checkpoint.*.*.parquet")
        if not parts:
            raise UnreadableLogError(
                f"{self.folder}: _last_checkpoint names version {version}, which has no checkpoint"
            )
        return parts

    def _read_checkpoint(self, version: int) -> None:
        for name in self._checkpoint_files(version):
            # In batches, on this thread: a whole-file read of three columns of a checkpoint with
            # 100,000 tombstones left the process 70 MB larger; batches leave it 10 MB larger.
            parquet = pq.ParquetFile(self.folder.open(name))
            for rows in parquet.iter_batches(_CHECKPOINT_BATCH, columns=list(_WANTED), use_threads=False):
                for action in _WANTED:
                    column = rows.column(action)
                    for value in column.filter(column.is_valid()).to_pylist():
                        self._apply(action, value)
        self.version = version

    def _read_commit(self, version: int) -> bool:
        text = self.folder.read_text(commit_name(version))
        if text is None:
            return False
        for line in text.splitlines():
            stripped = line.lstrip()
            # Each line holds one action, its name first; only three kinds matter here, and the
            # thousands of add and remove lines of a compaction are skipped unparsed.
            if not stripped or (stripped.startswith('{"') and not stripped.startswith(_WANTED_PREFIXES)):
                continue
            for action, value in json.loads(stripped).items():
                if action in _WANTED:
                    self._apply(action, value)
        self.version = version
        return True

    def _apply(self, action: str, value: dict) -> None:
        if action == "txn":
            self.txns[value["appId"]] = int(value["version"])
        elif action == "protocol":
            features = value.get("writerFeatures")
            self.protocol = Protocol(int(value["minWriterVersion"]), tuple(features) if features else None)
        else:
            self.schema_string = value["schemaString"]
            self.configuration = dict(_pairs(value.get("configuration")))


def commit_name(version: int) -> str:
    """The name of the commit file that made ``version``."""
    return f"{version:020d}.json"


def commit_path(log_folder: Path, version: int) -> Path:
    """Where Delta keeps the commit that made ``version`` on a local disk."""
    return log_folder / commit_name(version)


def _pairs(configuration: dict | list | None) -> list[tuple[str, str]]:
    """A map as JSON commits write it (an object) or as a checkpoint reads back (pairs)."""
    if not configuration:
        return []
    if isinstance(configuration, dict):
        return list(configuration.items())
    return [(key, value) for key, value in configuration]


_SCHEMAS: dict[str, pa.Schema] = {}


def _arrow_schema(schema_string: str) -> pa.Schema:
    """The Arrow schema of a ``schemaString``, parsed once per distinct schema."""
    if schema_string not in _SCHEMAS:
        if len(_SCHEMAS) > 64:
            _SCHEMAS.clear()
        _SCHEMAS[schema_string] = pa.schema(Schema.from_json(schema_string).to_arrow())
    return _SCHEMAS[schema_string]
