"""The local S3 server and Delta commits on it: what makes a commit on object storage safe.

A Delta version is created once. On S3 that needs put-if-absent (``If-None-Match: *``), so these
tests check it on the real server first, then delta-rs's commits through it from two processes.
"""

from __future__ import annotations

import os
import subprocess
import sys
import threading
import uuid
from concurrent.futures import ThreadPoolExecutor

import botocore.exceptions
import pyarrow as pa
import pytest
from deltalake import DeltaTable, write_deltalake
from gamelake_dev.localstack.object_store import client

from ingest.core.settings.object_storage import s3_access
from ingest.core.settings.paths import PROJECT_DIR
from ingest.landing.delta.log_folder import log_folder
from ingest.landing.delta.table_location import TableLocation
from ingest.landing.delta.table_scan import scan
from ingest.ops.log_side_files import remove_orphaned

pytestmark = pytest.mark.integration

RACERS = 6


def _put_if_absent(s3, bucket: str, key: str, body: bytes) -> bool:
    """True when this put created the key; False when the server refused it with 412."""
    try:
        s3.put_object(Bucket=bucket, Key=key, Body=body, IfNoneMatch="*")
    except botocore.exceptions.ClientError as err:
        assert err.response["ResponseMetadata"]["HTTPStatusCode"] == 412, err.response
        return False
    return True


def test_racing_put_if_absent_calls_on_one_key_let_exactly_one_win(local_s3):
    s3 = client(local_s3)
    prefix = f"race-{uuid.uuid4().hex[:8]}"
    for round_ in range(25):
        key = f"{prefix}/{round_:05d}.json"
        start = threading.Barrier(RACERS)

        def race(racer: int, key: str = key, start: threading.Barrier = start) -> bool:
            start.wait()
            return _put_if_absent(s3, local_s3.bucket, key, f"racer {racer}".encode() * 4096)

        with ThreadPoolExecutor(RACERS) as pool:
            won = list(pool.map(race, range(RACERS)))
        assert won.count(True) == 1, f"round {round_}: {won}"
        kept = s3.get_object(Bucket=local_s3.bucket, Key=key)["Body"].read()
        assert kept == f"racer {won.index(True)}".encode() * 4096, "the object is the winner's, whole"


def test_put_if_absent_on_an_existing_key_is_refused_and_the_object_stays(local_s3):
    s3 = client(local_s3)
    key = f"exists-{uuid.uuid4().hex[:8]}/00000.json"
    assert _put_if_absent(s3, local_s3.bucket, key, b"first") is True
    assert _put_if_absent(s3, local_s3.bucket, key, b"second") is False
    assert s3.get_object(Bucket=local_s3.bucket, Key=key)["Body"].read() == b"first"


@pytest.fixture
def s3_options(local_s3, monkeypatch) -> dict[str, str]:
    """delta-rs options from the local server's standard AWS variables, and no other AWS_ ones."""
    for name in [name for name in os.environ if name.startswith("AWS_")]:
        monkeypatch.delenv(name)
    for name, value in local_s3.client_environment().items():
        monkeypatch.setenv(name, value)
    return s3_access(f"s3://{local_s3.bucket}").delta_rs_options()


def test_delta_rs_appends_from_two_processes_to_one_table_on_s3_lose_and_repeat_nothing(local_s3, s3_options):
    uri = f"s3://{local_s3.bucket}/race-{uuid.uuid4().hex[:8]}/events"
    per_writer = 20
    schema = pa.schema([("writer", pa.string()), ("index", pa.int64())])
    DeltaTable.create(uri, schema, storage_options=s3_options)  # as the ingest makes its tables first
    writers = [
        subprocess.Popen(
            [sys.executable, "-m", "tests.integration.s3_appender", uri, name, str(per_writer)],
            env=dict(os.environ),  # the AWS variables of s3_options, as an operator sets them
            cwd=PROJECT_DIR,
            stderr=subprocess.PIPE,
            text=True,
        )
        for name in ("a", "b")
    ]
    for writer in writers:
        _, err = writer.communicate(timeout=300)
        assert writer.returncode == 0, err

    table = DeltaTable(uri, storage_options=s3_options)
    assert table.version() == 2 * per_writer, "one version per append, none overwritten"
    rows = scan(table).to_pylist()
    assert sorted((r["writer"], r["index"]) for r in rows) == sorted(
        (name, index) for name in ("a", "b") for index in range(per_writer)
    )
    history = table.history()
    assert sorted(entry["operation"] for entry in history) == ["CREATE TABLE"] + ["WRITE"] * 2 * per_writer


def test_a_delta_rs_commit_without_conditional_put_is_refused_not_made_unsafely(local_s3, s3_options):
    uri = f"s3://{local_s3.bucket}/unsafe-{uuid.uuid4().hex[:8]}/events"
    options = {**s3_options, "conditional_put": "disabled"}
    with pytest.raises(OSError, match="PutMode::Create"):
        write_deltalake(uri, pa.table({"a": [1]}), storage_options=options)
    listed = client(local_s3).list_objects_v2(Bucket=local_s3.bucket, Prefix=uri.split("/", 3)[3])
    assert not [o["Key"] for o in listed.get("Contents", []) if "_delta_log/" in o["Key"]], (
        "no version written"
    )


def test_blind_appends_racing_for_one_version_on_s3_let_one_win_and_delta_rs_reads_it(local_s3, s3_options):
    from deltalake import Transaction

    from ingest.landing.delta.bronze_writer import BronzeWriter
    from ingest.landing.delta.object_delta_log import ObjectDeltaLog
    from ingest.landing.delta.table_location import TableLocation
    from ingest.landing.delta.tables import write_part

    location = TableLocation.of(f"s3://{local_s3.bucket}/blind-{uuid.uuid4().hex[:8]}/bronze")
    writer = BronzeWriter(location, "app")
    version = writer.state.version + 1
    start = threading.Barrier(RACERS)
    row = pa.table({"_kafka_offset": pa.array([7], pa.int64())})

    def race(racer: int) -> bool:
        add = write_part(location, "2026-11-26", row, 0)
        log = ObjectDeltaLog(location)
        start.wait()
        return log.append(version, [add], [Transaction(f"racer-{racer}", racer)], {}, ["event_date"])

    with ThreadPoolExecutor(RACERS) as pool:
        won = list(pool.map(race, range(RACERS)))
    assert won.count(True) == 1
    table = location.delta_table()
    assert table.version() == version
    assert scan(table, ["_kafka_offset"])["_kafka_offset"].to_pylist() == [7]
    assert table.transaction_version(f"racer-{won.index(True)}") == won.index(True)


def test_short_processes_that_read_a_table_on_s3_exit_cleanly(local_s3, s3_options):
    """pyarrow's dataset aborted 16 of 40 such processes at exit (delta-io/delta-rs#2184);
    ``scan`` reads through delta-rs's engine instead."""
    uri = f"s3://{local_s3.bucket}/exits-{uuid.uuid4().hex[:8]}/events"
    for part in range(6):  # several files, read in parallel
        write_deltalake(
            uri, pa.table({"n": range(part * 10, part * 10 + 10)}), storage_options=s3_options, mode="append"
        )
    reader = (
        "import sys; from deltalake import DeltaTable;"
        "from ingest.core.settings.object_storage import s3_access;"
        "from ingest.landing.delta.table_scan import scan;"
        "t = DeltaTable(sys.argv[1], storage_options=s3_access(sys.argv[1]).delta_rs_options());"
        "print(scan(t, ['n'], where='\"n\" >= 5').num_rows)"
    )
    for _ in range(12):
        done = subprocess.run(
            [sys.executable, "-c", reader, uri], cwd=PROJECT_DIR, capture_output=True, text=True, timeout=120
        )
        assert (done.returncode, done.stdout.strip()) == (0, "55"), done.stderr


def test_the_side_files_a_cleanup_left_on_s3_are_removed_past_one_delete_request(on_s3):
    """ObjectLogFolder.remove deletes in requests of 1,000 keys; what the upkeep removes after a
    log cleanup (ingest/ops/log_side_files.py) goes, and the commit it kept stays."""
    table = TableLocation.of(on_s3)
    checksums = [f"{version:020d}.crc" for version in range(1005)]
    kept = f"{1005:020d}.json"
    for name in [*checksums, kept]:
        table.s3.put_object(Bucket=table.bucket, Key=table.key(f"_delta_log/{name}"), Body=b"{}")
    assert remove_orphaned(log_folder(table)) == len(checksums)
    assert log_folder(table).matching("*") == [kept]
