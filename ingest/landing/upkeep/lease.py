"""A lock that holds across hosts for a table on S3: a lease in numbered generations, each one
created with a conditional put (``If-None-Match: *``).

A ``flock`` keeps two compactions apart on one host only. On S3 the lock is a series of objects,
``_delta_log/.gamelake-compaction.lock.<generation>``. The newest generation says who holds the
lease and until when, or that it was let go.

- **Taking it**: read the newest generation (a listing and a GET). When it is let go or lapsed,
  create the next generation. Of several takers, exactly one creates it.
- **Renewing** (before each compaction bin): create the next generation again. A holder whose
  lease lapsed and was taken over finds that generation taken, and stops before it commits
  again.
- **Letting go**: create the next generation, marked as let go. If it is taken already, the
  lease was taken over, and there is nothing to let go.

Only the create-if-absent put is relied on. It is the one that Delta commits need anyway, and
S3 and S3Proxy both honour it. A put with ``If-Match`` would rewrite one object in place, but
S3Proxy does not check that one atomically: of six racers, more than one won in 58 of 150 rounds
here. Clocks need to agree to well within ``ttl_s``, which also bounds how long a holder that
died keeps others waiting.
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
_TAKEN = frozenset({409, 412})  # the generation exists, or another put of it is in flight


@dataclass
class Lease:
    table: TableLocation
    holder: str
    ttl_s: float
    generation: int
    clock: Callable[[], float] = time.time

    def renew(self) -> bool:
        """Extend the lease; False when it was taken over (the holder must stop)."""
        if not _create(self.table, self.generation + 1, _body(self.holder, self.clock() + self.ttl_s)):
            return False
        self.generation += 1
        _prune(self.table, self.generation)
        return True

    def release(self) -> None:
        """Let go, unless it was taken over meanwhile (then it is the new holder's)."""
        _create(self.table, self.generation + 1, _body(self.holder, 0.0, released=True))


def acquire(
    table: TableLocation, ttl_s: float = DEFAULT_TTL_S, clock: Callable[[], float] = time.time
) -> Lease | None:
    """The table's lease, or None when another holder's lease runs."""
    holder = f"{socket.gethostname()}-{uuid.uuid4().hex[:8]}"
    newest = _newest(table)
    generation = 0
    if newest is not None:
        number, state = newest
        if not state.get("released") and float(state["expires_at"]) > clock():
            return None
        generation = number + 1
    if not _create(table, generation, _body(holder, clock() + ttl_s)):
        return None  # another taker created that generation first
    _prune(table, generation)
    return Lease(table, holder, ttl_s, generation, clock)


def _key(table: TableLocation, generation: int) -> str:
    return table.key(f"_delta_log/{LOCK_NAME}.{generation:020d}")


def _body(holder: str, expires_at: float, released: bool = False) -> bytes:
    return json.dumps({"holder": holder, "expires_at": expires_at, "released": released}).encode()


def _create(table: TableLocation, generation: int, body: bytes) -> bool:
    try:
        table.s3.put_object(Bucket=table.bucket, Key=_key(table, generation), Body=body, IfNoneMatch="*")
    except table.s3.exceptions.ClientError as err:
        if _status(err) in _TAKEN:
            return False
        raise
    return True


def _generations(table: TableLocation) -> list[int]:
    prefix = table.key(f"_delta_log/{LOCK_NAME}.")
    listed = table.s3.list_objects_v2(Bucket=table.bucket, Prefix=prefix)
    names = (item["Key"][len(prefix) :] for item in listed.get("Contents", []))
    # A store may list its own temporary files of a put in flight (S3Proxy does): not generations.
    return sorted(int(name) for name in names if len(name) == 20 and name.isdigit())


def _newest(table: TableLocation) -> tuple[int, dict[str, Any]] | None:
    generations = _generations(table)
    if not generations:
        return None
    answer = table.s3.get_object(Bucket=table.bucket, Key=_key(table, generations[-1]))
    return generations[-1], json.loads(answer["Body"].read())


def _prune(table: TableLocation, current: int) -> None:
    """Delete the generations before the previous one: only the newest is ever read."""
    for old in _generations(table):
        if old < current - 1:
            table.s3.delete_object(Bucket=table.bucket, Key=_key(table, old))


def _status(err: Exception) -> int | None:
    status = getattr(err, "response", {}).get("ResponseMetadata", {}).get("HTTPStatusCode")
    return int(status) if status is not None else None
