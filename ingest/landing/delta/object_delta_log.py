"""Blind appends written straight into a table's ``_delta_log`` on S3, with a conditional put.

The same commit ``local_delta_log`` links into place on a local disk, created here with
``If-None-Match: *``: the store answers 412 when the version exists, so of two writers racing for
it exactly one wins, which is all step 3 of "Why landing is exactly-once" (doc/DESIGN.md) asks.
It costs one request. delta-rs's own commit costs eight here: a listing and two reads of the
previous commit to refresh its handle, the put, then a listing and two reads of the new commit.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping, Sequence

from deltalake import Transaction
from deltalake.transaction import AddAction

from ingest.core.logs.json_log import log_event
from ingest.landing.delta.local_delta_log import append_commit
from ingest.landing.delta.log_state import commit_name
from ingest.landing.delta.table_location import TableLocation

# 412: the version exists. 409: another conditional write of the key is in flight (AWS).
_LOST_RACE = frozenset({409, 412})
# A store that does not implement conditional writes says so (501, or 400 for an unknown header).
_NOT_HONOURED = frozenset({400, 501})


class ObjectDeltaLog:
    """The ``_delta_log`` of a table on S3."""

    def __init__(self, table: TableLocation) -> None:
        self.table = table
        self.prefix = table.key("_delta_log")
        self.refused: str | None = None  # why this store cannot take blind appends, once it said so

    def append(
        self,
        version: int,
        adds: Sequence[AddAction],
        txns: Sequence[Transaction],
        metadata: Mapping[str, str],
        partition_by: Sequence[str],
    ) -> bool:
        """Commit ``adds`` and ``txns`` as ``version``; False when that version exists already, or
        when the store refuses conditional writes (``refused`` then says why)."""
        body = append_commit(version, adds, txns, metadata, partition_by).encode()
        key = f"{self.prefix}/{commit_name(version)}"
        try:
            self.table.s3.put_object(Bucket=self.table.bucket, Key=key, Body=body, IfNoneMatch="*")
            return True
        except self.table.s3.exceptions.ClientError as err:
            status = err.response.get("ResponseMetadata", {}).get("HTTPStatusCode")
            if status in _LOST_RACE:
                return False
            if status not in _NOT_HONOURED:
                raise
            self.refused = f"{self.table.uri} refuses conditional writes ({status}: {err})"
            log_event("blind_appends_off", logging.WARNING, detail=self.refused)
            return False
