"""The migration's own reads, writes and removals on S3, against an in-memory stand-in for the
store: data files written, read back and removed; dbt's tables listed; a reader's commits read
from the log; and bronze's compaction lock renewed through a long rewrite. delta-rs' own requests
(opening a table, committing) need a real store: tests/integration/test_lakehouse_on_s3.py."""

from __future__ import annotations

import io
import json

import botocore.exceptions
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from ingest.core.settings.object_storage import S3Access
from ingest.landing.delta import table_location
from ingest.landing.delta.table_location import TableLocation
from ingest.landing.delta.tables import write_part
from ingest.landing.upkeep.compaction import Held
from ingest.ops.migrations import reader_marks
from ingest.ops.migrations.data_files import open_data_file, remove_data_files
from ingest.ops.migrations.json_text_plan import MigrationError
from ingest.ops.migrations.kept_lock import RENEW_EVERY_S, KeptLock
from ingest.ops.migrations.table_rewrite import remove


class _NoSuchKey(Exception):
    pass


class _Exceptions:
    NoSuchKey = _NoSuchKey
    ClientError = botocore.exceptions.ClientError


class _Bucket:
    """The S3 calls these paths make, on objects kept in a dict by (bucket, key)."""

    exceptions = _Exceptions

    def __init__(self) -> None:
        self.objects: dict[tuple[str, str], bytes] = {}

    def put_object(self, Bucket: str, Key: str, Body: bytes, **_: object) -> None:
        self.objects[(Bucket, Key)] = bytes(Body)

    def get_object(self, Bucket: str, Key: str) -> dict:
        if (Bucket, Key) not in self.objects:
            raise _NoSuchKey(Key)
        return {"Body": io.BytesIO(self.objects[(Bucket, Key)])}

    def delete_object(self, Bucket: str, Key: str) -> None:
        self.objects.pop((Bucket, Key), None)

    def get_paginator(self, operation: str) -> _Bucket:
        assert operation == "list_objects_v2"
        return self

    def paginate(self, Bucket: str, Prefix: str, Delimiter: str) -> list[dict]:
        rests = [
            key[len(Prefix) :] for bucket, key in self.objects if bucket == Bucket and key.startswith(Prefix)
        ]
        prefixes = sorted(
            {Prefix + rest.split(Delimiter, 1)[0] + Delimiter for rest in rests if Delimiter in rest}
        )
        return [{"CommonPrefixes": [{"Prefix": prefix} for prefix in prefixes]}]


@pytest.fixture
def bucket(monkeypatch: pytest.MonkeyPatch) -> _Bucket:
    store = _Bucket()
    monkeypatch.setattr(table_location, "s3_client", lambda access: store)
    return store


def _on_s3(prefix: str) -> TableLocation:
    return TableLocation(f"s3://lake/{prefix}", S3Access("AKIDEXAMPLE", "secret"))


def test_a_rewritten_file_is_written_read_back_and_removed_on_s3(bucket: _Bucket) -> None:
    bronze = _on_s3("gamelake/bronze/game_events")
    rows = pa.table({"event_id": ["a", "b"], "score": [1, 2]})
    add = write_part(bronze, "2024-05-01", rows, 0, data_change=False)
    assert add.path.startswith("event_date=2024-05-01/")
    assert ("lake", f"gamelake/bronze/game_events/{add.path}") in bucket.objects

    assert pq.ParquetFile(open_data_file(bronze, add.path)).read() == rows
    remove(bronze, [add])
    remove_data_files(bronze, [add.path])  # a file gone already is no error, as on a disk
    assert not bucket.objects


def test_dbt_s_tables_are_listed_by_schema_and_table_on_s3(bucket: _Bucket) -> None:
    for key in (
        "wh/silver.db/silver_a/_delta_log/00000000000000000000.json",
        "wh/silver.db/silver_quarantine/part-0.parquet",
        "wh/gold.db/gold_a_player_agg/_delta_log/00000000000000000000.json",
        "wh/not_a_schema/x/_delta_log/00000000000000000000.json",
    ):
        bucket.put_object("lake", key, b"{}")
    listed = reader_marks._dbt_tables(_on_s3("wh"))
    assert [(name, place.uri) for name, place in listed] == [
        ("gold.gold_a_player_agg", "s3://lake/wh/gold.db/gold_a_player_agg"),
        ("silver.silver_a", "s3://lake/wh/silver.db/silver_a"),
        ("silver.silver_quarantine", "s3://lake/wh/silver.db/silver_quarantine"),
    ]


def test_a_reader_s_inserts_are_read_from_its_log_on_s3(bucket: _Bucket) -> None:
    silver = _on_s3("wh/silver.db/silver_a")
    commits = {
        1: [{"add": {"path": "p1", "dataChange": True}}],
        2: [{"add": {"path": "p2", "dataChange": False}}],  # a rewrite: nothing new to read
        3: [{"metaData": {}}],
    }
    for version, actions in commits.items():
        body = "\n".join(json.dumps(action) for action in actions).encode()
        bucket.put_object("lake", silver.key(f"_delta_log/{version:020d}.json"), body)
    assert reader_marks.inserting_versions(silver, 0, 3) == [1]
    assert reader_marks.has_read_all(silver, 1, 3)
    assert not reader_marks.has_read_all(silver, 3, 4), "a commit the log no longer holds is not read"


class _Lease(Held):
    def __init__(self, answers: list[bool]) -> None:
        super().__init__()
        self.answers, self.renewals = answers, 0

    def still_held(self) -> bool:
        self.renewals += 1
        return self.answers.pop(0)


def test_the_compaction_lock_is_renewed_through_a_long_rewrite_and_a_lost_one_stops_it() -> None:
    now = [0.0]
    lease = _Lease([True, False])
    lock = KeptLock(lease, clock=lambda: now[0])
    reported: list[tuple[int, int]] = []
    progress = lock.reporting(lambda done, total: reported.append((done, total)))
    progress(1, 3)
    assert lease.renewals == 0, "not renewed before it is due"
    now[0] += RENEW_EVERY_S
    progress(2, 3)
    assert lease.renewals == 1 and reported == [(1, 3), (2, 3)]
    now[0] += RENEW_EVERY_S
    with pytest.raises(MigrationError, match="compaction lock lapsed"):
        progress(3, 3)


def test_a_local_lock_is_held_until_let_go() -> None:
    lock = KeptLock(Held())
    lock.renew()
    lock.reporting(None)(1, 1)
