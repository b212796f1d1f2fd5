"""The compaction lock on S3: a lease that holds across hosts (here, threads with their own
clients against the local S3 server), and the duplicate it prevents."""

from __future__ import annotations

import os
import threading
import time
import uuid
from concurrent.futures import ThreadPoolExecutor

import pyarrow as pa
import pytest
from deltalake import write_deltalake

from ingest.landing.delta.table_location import TableLocation
from ingest.landing.delta.table_scan import scan
from ingest.landing.upkeep import lease
from ingest.landing.upkeep.compaction import compact, compaction_lock

pytestmark = pytest.mark.integration

RACERS = 6


@pytest.fixture
def table(local_s3, monkeypatch) -> TableLocation:
    """A fresh table location on the local S3 server, reached with the standard AWS variables."""
    for name in [name for name in os.environ if name.startswith("AWS_")]:
        monkeypatch.delenv(name)
    for name, value in local_s3.client_environment().items():
        monkeypatch.setenv(name, value)
    return TableLocation.of(f"s3://{local_s3.bucket}/lease-{uuid.uuid4().hex[:8]}/table")


def _fresh(table: TableLocation) -> TableLocation:
    """The same table through a client of its own, as another host would reach it (made now:
    making a client can take longer than a short lease)."""
    other = TableLocation.of(table.uri)
    assert other.s3 is not None
    return other


def _race(table: TableLocation, take) -> list:
    start = threading.Barrier(RACERS)

    def one(_: int):
        mine = _fresh(table)
        start.wait()
        return take(mine)

    with ThreadPoolExecutor(RACERS) as pool:
        return list(pool.map(one, range(RACERS)))


def test_of_racing_takers_exactly_one_gets_the_lease(table):
    for _ in range(10):
        leases = _race(table, lease.acquire)
        held = [taken for taken in leases if taken is not None]
        assert len(held) == 1
        held[0].release()


def test_a_lapsed_lease_is_taken_over_by_exactly_one_and_its_old_holder_learns_it(table):
    other = _fresh(table)
    old = lease.acquire(table, ttl_s=3.0)
    assert old is not None
    assert lease.acquire(other) is None, "a running lease keeps others out"
    time.sleep(3.5)
    takers = _race(table, lease.acquire)
    held = [taken for taken in takers if taken is not None]
    assert len(held) == 1
    assert old.renew() is False, "the lapsed holder must stop before it commits again"
    old.release()  # lets go of nothing: the lease is the new holder's now
    assert lease.acquire(_fresh(table)) is None
    assert held[0].renew() is True
    held[0].release()
    assert lease.acquire(_fresh(table)) is not None, "released, it is free"


def _small_files(table: TableLocation, count: int = 8) -> None:
    for index in range(count):
        rows = pa.table({"n": pa.array(range(index * 10, index * 10 + 10), pa.int64())})
        write_deltalake(table.uri, rows, mode="append", storage_options=table.storage_options)


def test_two_compactions_of_one_version_both_commit_and_double_rows_without_the_lock(table):
    """The delta-rs 1.6.6 behaviour the lock exists for, kept as a reproduction."""
    _small_files(table)
    first, second = table.delta_table(), _fresh(table).delta_table()  # both at the same version
    first.optimize.compact()
    second.optimize.compact()  # not refused, though the files it rewrites are gone
    rows = scan(table.delta_table(), ["n"])["n"].to_pylist()
    assert len(rows) == 2 * 80, "every row twice: what compact() under its lock prevents"


def test_a_compaction_while_another_holds_the_lease_is_skipped_and_no_row_doubles(table):
    _small_files(table)
    with compaction_lock(_fresh(table)) as held:
        assert held is not None
        assert compact(_fresh(table)) == {"skipped": "another compaction of this table is running"}
    result = compact(_fresh(table))
    assert result["numFilesRemoved"] == 8 and result["numFilesAdded"] == 1
    assert sorted(scan(table.delta_table(), ["n"])["n"].to_pylist()) == list(range(80))
