"""The soak's lakehouse on S3: a private S3Proxy, bronze's size by listing, the ingest's requests.

``bench.soak --s3`` lands at ``s3://<bucket>/soak-<id>`` on an S3Proxy of its own on loopback,
started with its request log on as ``bench.object_storage`` does; it shares the machine's cores
with the service, and its CPU is not in the soak's. Each ``request:`` line of that log is one
request, classified by kind: PUT, POST (a multipart upload's start or end), GET, HEAD, LIST (a
GET with ``list-type``) and DELETE (a multi-object delete, a POST with ``?delete``, is one DELETE
request for up to 1,000 keys).

The sampler lists bronze's prefix at most every ``LIST_EVERY_S``: a listing is requests too, one
per 1,000 keys. It asks for the objects' owners, which neither the service nor delta-rs does, so
its LISTs carry ``fetch-owner=true`` in the logged URL; they are left out of the ingest's counts
and reported on their own. The ingest's requests (the service and its upkeep child) are counted
from the service's start to the end of production: after that, the harness's own reads of the
tables (waiting for the last rows, the report) would count too.
"""

from __future__ import annotations

import contextlib
import datetime as dt
import math
import tempfile
import time
import uuid
from collections import Counter, defaultdict
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

from gamelake_dev.localstack import process

from bench.object_storage import _REQUEST, _start_s3
from bench.run import Lakehouse
from ingest.landing.delta.table_location import TableLocation

LIST_EVERY_S = 15.0
KINDS = ("PUT", "POST", "GET", "HEAD", "LIST", "DELETE")
SAMPLER_MARK = "fetch-owner=true"


@contextlib.contextmanager
def private_s3() -> Iterator[tuple[Lakehouse, Path]]:
    """A fresh lakehouse at ``s3://<bucket>/soak-<id>`` on a private S3Proxy, and its request log.

    The lakehouse's local folder holds only the service's own log: the tables are on S3."""
    server, where = _start_s3(Path(tempfile.mkdtemp(prefix="gamelake-soak-s3-")))
    try:
        warehouse = Path(tempfile.mkdtemp(prefix="gamelake-soak-"))
        yield Lakehouse(warehouse, f"s3://{where.bucket}/soak-{uuid.uuid4().hex[:8]}"), server.log_file
    finally:
        process.stop(server)


class ListedSizes:
    """Bronze's data and ``_delta_log`` files and bytes on S3, listed again at most every
    ``LIST_EVERY_S``; between listings, the last one's."""

    def __init__(self, bronze: TableLocation) -> None:
        self.bronze = bronze
        self.sizes: dict[str, float] = {}
        self.listed_at = -math.inf

    def __call__(self) -> dict[str, float]:
        if time.monotonic() - self.listed_at >= LIST_EVERY_S:
            self.sizes, self.listed_at = _listing(self.bronze), time.monotonic()
        return self.sizes


def _listing(bronze: TableLocation) -> dict[str, float]:
    pages = bronze.s3.get_paginator("list_objects_v2").paginate(
        Bucket=bronze.bucket,
        Prefix=bronze.key(""),
        FetchOwner=True,  # SAMPLER_MARK in the log
    )
    sizes = dict.fromkeys(("data_files", "data_mb", "log_files", "log_mb"), 0.0)
    for page in pages:
        for entry in page.get("Contents", []):
            part = "log" if "/_delta_log/" in entry["Key"] else "data"
            sizes[f"{part}_files"] += 1
            sizes[f"{part}_mb"] += entry["Size"] / 1e6
    return sizes


@dataclass(frozen=True)
class Requests:
    """The ingest's requests under the soak's prefix, by minute (its start, epoch seconds) and kind."""

    by_minute: dict[int, Counter[str]]
    sampler_lists: int

    def minute(self, start: float) -> dict[str, int]:
        """The per-minute columns of the minute starting at ``start``."""
        counts = self.by_minute.get(int(start), Counter())
        return {"s3_requests": counts.total(), **{f"s3_{kind.lower()}": counts[kind] for kind in KINDS}}

    def total(self) -> Counter[str]:
        return sum(self.by_minute.values(), Counter())


def logged_requests(log: Path, lake_uri: str, window: tuple[float, float]) -> Requests:
    """The requests in the server's ``log`` under ``lake_uri`` from ``window[0]`` to ``window[1]``."""
    prefix = lake_uri.rsplit("/", 1)[1]  # soak-<id>: bare in a key, and in a listing's prefix= too
    year = dt.datetime.fromtimestamp(window[0]).year
    by_minute: dict[int, Counter[str]] = defaultdict(Counter)
    sampler_lists = 0
    for at, method, path in _logged(log, year):
        if prefix not in path or not window[0] <= at <= window[1]:
            continue
        if SAMPLER_MARK in path:
            sampler_lists += 1
        else:
            by_minute[int(at // 60) * 60][_kind(method, path)] += 1
    return Requests(dict(by_minute), sampler_lists)


def _logged(log: Path, year: int) -> Iterator[tuple[float, str, str]]:
    """(epoch seconds, method, path and query) of each request, read a line at a time: a long
    run's debug log is large. S3Proxy stamps its lines in local time, as ``timestamp()`` reads a
    naive datetime."""
    with open(log, errors="replace") as lines:
        for line in lines:
            match = _REQUEST.search(line) if "request: " in line else None
            if match:
                at = dt.datetime.strptime(f"{year}-{match[1]}", "%Y-%m-%d %H:%M:%S.%f")
                yield at.timestamp(), match[2], match[3]


def _kind(method: str, path: str) -> str:
    if method == "GET" and "list-type=" in path:
        return "LIST"
    if method == "POST" and "?delete" in path:
        return "DELETE"
    return method


def request_summary(requests: Requests, commits: int) -> dict[str, object]:
    """The run's requests by kind, and per bronze commit landed in the same window."""
    total = requests.total()
    per_commit = {kind: round(total[kind] / max(commits, 1), 2) for kind in KINDS}
    return {
        "s3_requests": {kind: total[kind] for kind in KINDS},
        "s3_requests_per_bronze_commit": {"all": round(total.total() / max(commits, 1), 1), **per_commit},
        "bronze_commits_counted": commits,
        "sampler_lists_left_out": requests.sampler_lists,
    }
