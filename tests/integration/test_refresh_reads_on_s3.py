"""What the continuous refresh reads and holds on S3 beside Spark: dbt's build lock, taken by
processes standing in for hosts (delta-rs takers among themselves, and against a Spark driver
taking it as dbt's on-run-start does), and the readers' marks read from the Delta logs once a
cycle.

The lock's table is shaped as dbt's on-run-start creates it. Every round, processes race for it
at the same instant; on a local disk the same race is in tests/unit/test_build_lock_from_python.py.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time

import pyarrow as pa
import pytest
from deltalake import CommitProperties, write_deltalake
from gamelake_dev.localstack.object_store import client

from ingest.core.settings.paths import PROJECT_DIR
from ingest.landing.delta.table_location import TableLocation
from ingest.landing.delta.table_scan import scan
from ingest.ops.bronze_marks import MARK, MARKED_AT, BronzeMark, ReaderMarks
from ingest.ops.dbt_build_lock import lock_table

pytestmark = pytest.mark.integration

SCHEMA = pa.schema([("name", pa.string()), ("holder", pa.string()), ("taken_at", pa.timestamp("us", "UTC"))])
HOSTS = 4
ROUNDS = 3
AT = "2026-11-28 01:00:00"


def _holders(tables: TableLocation) -> list[str]:
    return [row["holder"] for row in scan(lock_table(tables).delta_table()).to_pylist()]


def _delta_rs_takers(tables: TableLocation, start: float, count: int) -> list[subprocess.Popen[str]]:
    return [
        subprocess.Popen(
            [
                sys.executable,
                "-m",
                "tests.integration.s3_lock_taker",
                tables.uri,
                f"host-{n}",
                str(start),
                "3",
            ],
            cwd=PROJECT_DIR,
            env=dict(os.environ),
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        for n in range(count)
    ]


def test_of_processes_racing_for_the_build_lock_on_s3_exactly_one_holds_it_each_round(on_s3):
    tables = TableLocation.of(f"{on_s3}/spark-warehouse")
    lock = lock_table(tables)
    write_deltalake(lock.uri, SCHEMA.empty_table(), storage_options=lock.storage_options)
    for round_ in range(ROUNDS):
        start = time.time() + 8  # after every process has imported and resolved its credentials
        racers = _delta_rs_takers(tables, start, HOSTS)
        outcomes = []
        for racer in racers:
            out, err = racer.communicate(timeout=120)
            assert racer.returncode == 0, err[-2000:]
            outcomes.append(out.strip())
        assert sorted(outcomes) == ["held"] + ["refused"] * (HOSTS - 1), (round_, outcomes)
        assert _holders(tables) == [], "the holder released the lock"


def test_a_spark_merge_and_delta_rs_racing_for_the_build_lock_on_s3_let_exactly_one_hold_it(on_s3, tmp_path):
    # dbt's on-run-start takes the lock with a Spark MERGE (through the conditional-put log store),
    # the continuous refresh with delta-rs: on two hosts they race for the same log version
    tables = TableLocation.of(f"{on_s3}/spark-warehouse")
    lock = lock_table(tables)
    write_deltalake(lock.uri, SCHEMA.empty_table(), storage_options=lock.storage_options)
    spark = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "tests.integration.s3_spark_lock_taker",
            str(tmp_path),
            tables.uri,
            "spark",
            "3",
        ],
        cwd=PROJECT_DIR,
        env=dict(os.environ),
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        assert spark.stdout is not None and spark.stdin is not None
        assert spark.stdout.readline().strip() == "ready", spark.stderr.read() if spark.stderr else ""
        winners = []
        # delta-rs starts as Spark's MERGE does, then while it plans, then while it commits
        for round_, delta_rs_late_s in enumerate((0.0, 0.7, 1.4)):
            start = time.time() + 8  # after every taker has imported and resolved its credentials
            spark.stdin.write(f"{start}\n")
            spark.stdin.flush()
            takers = _delta_rs_takers(tables, start + delta_rs_late_s, 2)
            outcomes = []
            for taker in takers:
                out, err = taker.communicate(timeout=120)
                assert taker.returncode == 0, err[-2000:]
                outcomes.append(("delta-rs", out.strip()))
            outcomes.append(("spark", spark.stdout.readline().strip()))
            held = [engine for engine, outcome in outcomes if outcome == "held"]
            assert len(held) == 1 and all(o in ("held", "refused") for _, o in outcomes), (round_, outcomes)
            assert _holders(tables) == [], "the holder released the lock"
            winners += held
        print(f"the lock went to: {winners}")
    finally:
        if spark.stdin:
            spark.stdin.close()
        spark.wait(timeout=120)
    assert spark.returncode == 0


def _write(place: TableLocation, metadata: str | None = None) -> None:
    rows = pa.table({"event_id": ["e1"], "bronze_version": [1]})
    properties = CommitProperties(custom_metadata={"userMetadata": metadata}) if metadata else None
    write_deltalake(
        place.uri, rows, mode="append", storage_options=place.storage_options, commit_properties=properties
    )


def _mark(reader: str, version: int) -> str:
    return json.dumps({"gamelake.reader": reader, MARK: version, MARKED_AT: AT})


def test_the_refresh_reads_every_readers_mark_on_s3_and_follows_new_commits(on_s3, local_s3):
    silver = TableLocation.of(f"{on_s3}/spark-warehouse/silver.db")
    _write(silver.child("silver_a"), _mark("silver.silver_a", 2))
    _write(silver.child("silver_quarantine"), _mark("silver.silver_quarantine", 2))
    _write(silver.child("silver_unmarked"))
    readers = ReaderMarks(silver)
    quarantine = {"silver.silver_quarantine": BronzeMark(2, AT)}
    assert readers.read() == {"silver.silver_a": BronzeMark(2, AT), **quarantine}
    assert readers.versions() == {
        "silver.silver_a": 0,
        "silver.silver_quarantine": 0,
        "silver.silver_unmarked": 0,
    }

    _write(silver.child("silver_a"), _mark("silver.silver_a", 6))
    _write(silver.child("silver_quarantine"))  # a commit without a mark keeps the one before
    assert readers.read() == {"silver.silver_a": BronzeMark(6, AT), **quarantine}

    # dropped, then made again at the same version numbers: its old mark must not survive
    s3 = client(local_s3)
    listed = s3.list_objects_v2(Bucket=local_s3.bucket, Prefix=silver.child("silver_a").key(""))
    for item in listed["Contents"]:
        s3.delete_object(Bucket=local_s3.bucket, Key=item["Key"])
    _write(silver.child("silver_a"))
    _write(silver.child("silver_a"))
    assert readers.read() == quarantine
