"""Blind appends written straight into a local table's ``_delta_log``.

On a local disk delta-rs 1.6.6 lists every entry of ``_delta_log`` for each refresh and twice
for each commit (the object_store crate's local listing walks the whole folder, even from an
offset). A bronze batch's cost therefore grew with ``log_retention_hours``: 2.2 µs per entry,
+0.27 s per batch at the 48-hour default and 10,000 events/s (bench/results/commit_cost.md).

A blind append needs no listing. Delta makes each version exist once, created with
put-if-absent, so a writer that holds the state at version N (``log_state.LogState``) learns
whether anyone else has committed by looking for N+1, and commits N+1 itself by linking a
finished file to that name, which fails if it exists: the mutual exclusion delta-rs itself uses
on a local disk. What is written is the same commit delta-rs writes for an append: commitInfo,
app transactions, adds.

Only tables whose protocol asks nothing more of an append than that take this path (``why_not``):
a table upgraded by another engine (deletion vectors, row tracking, constraints) is committed
through delta-rs, which knows those features.
"""

from __future__ import annotations

import errno
import json
import logging
import os
import time
import uuid
from collections.abc import Mapping, Sequence
from pathlib import Path
from urllib.parse import quote

from deltalake import Transaction
from deltalake.transaction import AddAction

from ingest.core.logs.json_log import log_event
from ingest.landing.delta.log_state import LogState, commit_path

# Writer version 4 is changeDataFeed and generatedColumns on top of appendOnly, invariants and
# checkConstraints (2, 3); an append honours them all when none is declared (checked below) and
# CDF readers derive an append's changes from its adds. Table features (7) may ask for more.
_MAX_WRITER_VERSION = 4
_ENGINE = "gamelake"
# What link() answers on a filesystem without hard links (some network and FUSE mounts).
_NO_HARD_LINKS = frozenset({errno.EPERM, errno.EOPNOTSUPP, errno.ENOTSUP, errno.ENOSYS, errno.EMLINK})


def why_not(state: LogState) -> str | None:
    """Why an append to the table must go through delta-rs, or None when it may be written here."""
    protocol = state.protocol
    if protocol.min_writer_version > _MAX_WRITER_VERSION or protocol.writer_features:
        features = list(protocol.writer_features or [])
        return f"writer protocol {protocol.min_writer_version} with features {features}"
    constraints = [k for k in state.configuration if k.startswith("delta.constraints.")]
    if constraints:
        return f"check constraints {constraints}"
    if _declares(json.loads(state.schema_string), ("delta.invariants", "delta.generationExpression")):
        return "column invariants or generated columns"
    return None


def _declares(node: object, keys: tuple[str, ...]) -> bool:
    if isinstance(node, dict):
        metadata = node.get("metadata")
        if isinstance(metadata, dict) and any(k in metadata for k in keys):
            return True
        return any(_declares(v, keys) for v in node.values())
    if isinstance(node, list):
        return any(_declares(v, keys) for v in node)
    return False


class LocalDeltaLog:
    """The ``_delta_log`` folder of a table on a local disk."""

    def __init__(self, table_root: Path) -> None:
        self.folder = table_root / "_delta_log"
        self.refused: str | None = None  # why this filesystem cannot take blind appends, once it said so

    def append(
        self,
        version: int,
        adds: Sequence[AddAction],
        txns: Sequence[Transaction],
        metadata: Mapping[str, str],
        partition_by: Sequence[str],
    ) -> bool:
        """Commit ``adds`` and ``txns`` as ``version``; False when that version exists already, or
        when the filesystem refuses hard links (``refused`` then says why; commit through delta-rs)."""
        staged = self.folder / f"_commit_{uuid.uuid4()}.json.tmp"
        staged.write_text(append_commit(version, adds, txns, metadata, partition_by))
        try:
            os.link(staged, commit_path(self.folder, version))
            return True
        except FileExistsError:
            return False
        except OSError as err:
            if err.errno not in _NO_HARD_LINKS:
                raise
            self.refused = f"{self.folder} refuses hard links ({err.strerror})"
            log_event("blind_appends_off", logging.WARNING, detail=self.refused)
            return False
        finally:
            staged.unlink()


def append_commit(
    version: int,
    adds: Sequence[AddAction],
    txns: Sequence[Transaction],
    metadata: Mapping[str, str],
    partition_by: Sequence[str],
) -> str:
    """The commit file of a blind append, as delta-rs writes it: commitInfo, app transactions, adds."""
    lines = [_commit_info(version, metadata, partition_by)]
    lines += [{"txn": {"appId": t.app_id, "version": t.version}} for t in txns]
    lines += [{"add": _add(a)} for a in adds]
    return "".join(json.dumps(line, separators=(",", ":")) + "\n" for line in lines)


def _commit_info(version: int, metadata: Mapping[str, str], partition_by: Sequence[str]) -> dict:
    info = {
        "timestamp": int(time.time() * 1000),
        "operation": "WRITE",
        "operationParameters": {"mode": "Append", "partitionBy": json.dumps(list(partition_by))},
        "readVersion": version - 1,
        "isBlindAppend": True,
        "engineInfo": _ENGINE,
    }
    return {"commitInfo": {**metadata, **info}}


def _add(action: AddAction) -> dict:
    return {
        "path": quote(action.path, safe="/="),
        "partitionValues": dict(action.partition_values),
        "size": action.size,
        "modificationTime": action.modification_time,
        "dataChange": action.data_change,
        "stats": action.stats,
    }
