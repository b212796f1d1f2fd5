"""A lock that holds across hosts for a table on S3: a lease object, written with conditional puts.

A ``flock`` keeps two compactions apart on one host only. On S3 the lock is the object
``_delta_log/.gamelake-compaction.lock``. It holds its holder and the time its lease runs out.

- **Taking it** is a put with ``If-None-Match: *``: of several takers, one wins.
- **Taking over a lapsed lease** is a put with ``If-Match`` the lapsed lease's ETag: of several
  takers, one wins, and a holder that renews in time keeps it.
- **Renewing** (before each compaction bin) is a put with ``If-Match`` the holder's own ETag. A
  holder whose lease was taken over learns it there and stops before it commits again.
- **Letting go** is a delete with ``If-Match``, so it never removes a lease taken over from it.

Each body carries a fresh nonce, so two bodies never share an ETag. Clocks need to agree to well
within ``ttl_s``, which bounds how long a holder that died keeps others waiting.
"""

from __future__ import annotations

import json
import socket
import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from ingest.landing.delta.table_location import TableLocation

LOCK_NAME = ".gamelake-compaction.lock"
DEFAULT_TTL_S = 300.0
_LOST = frozenset({404, 409, 412})  # gone, a put of the key in flight, or the condition failed


@dataclass
class Lease:
    table: TableLocation
    holder: str
    ttl_s: float
    etag: str
    clock: Callable[[], float] = time.time

    @property
    def key(self) -> str:
        return self.table.key(f"_delta_log/{LOCK_NAME}")

    def renew(self) -> bool:
        """Extend the lease; False when it was taken over (the holder must stop)."""
        etag = _put(self.table, self.key, _body(self.holder, self.clock() + self.ttl_s), IfMatch=self.etag)
        if etag is None:
            return False
        self.etag = etag
        return True

    def release(self) -> None:
        """Let go, unless it was taken over meanwhile (then it is the new holder's)."""
        try:
            self.table.s3.delete_object(Bucket=self.table.bucket, Key=self.key, IfMatch=self.etag)
        except self.table.s3.exceptions.ClientError as err:
            if _status(err) not in _LOST:
                raise


def acquire(
    table: TableLocation, ttl_s: float = DEFAULT_TTL_S, clock: Callable[[], float] = time.time
) -> Lease | None:
    """The table's lease, or None when another holder's lease runs."""
    holder = f"{socket.gethostname()}-{uuid.uuid4().hex[:8]}"
    key = table.key(f"_delta_log/{LOCK_NAME}")
    etag = _put(table, key, _body(holder, clock() + ttl_s), IfNoneMatch="*")
    if etag is None:
        current = _get(table, key)
        if current is None or current[0]["expires_at"] > clock():
            return None  # held (or let go this instant: the next upkeep takes it)
        etag = _put(table, key, _body(holder, clock() + ttl_s), IfMatch=current[1])
        if etag is None:
            return None
    return Lease(table, holder, ttl_s, etag, clock)


def _body(holder: str, expires_at: float) -> bytes:
    return json.dumps({"holder": holder, "expires_at": expires_at, "nonce": uuid.uuid4().hex}).encode()


def _put(table: TableLocation, key: str, body: bytes, **condition: str) -> str | None:
    """The new ETag, or None when the condition failed."""
    try:
        answer = table.s3.put_object(Bucket=table.bucket, Key=key, Body=body, **condition)
    except table.s3.exceptions.ClientError as err:
        if _status(err) in _LOST:
            return None
        raise
    return str(answer["ETag"])


def _get(table: TableLocation, key: str) -> tuple[dict[str, Any], str] | None:
    try:
        answer = table.s3.get_object(Bucket=table.bucket, Key=key)
    except table.s3.exceptions.NoSuchKey:
        return None
    return json.loads(answer["Body"].read()), str(answer["ETag"])


def _status(err: Exception) -> int | None:
    status = getattr(err, "response", {}).get("ResponseMetadata", {}).get("HTTPStatusCode")
    return int(status) if status is not None else None
