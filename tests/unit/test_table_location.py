"""Where a table lives, as the refresh and the landing name it: local folders, Spark's
``file:`` URIs for them, and S3 prefixes (named without reaching S3), whose client signs with
the keys botocore holds at each request."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

from ingest.core.settings.object_storage import S3Access
from ingest.landing.delta.table_location import TableLocation, s3_client
from tests.renewing_credentials import renewing


def test_a_local_folder_is_absolute_and_spark_s_file_uri_names_the_same_one(tmp_path: Path) -> None:
    folder = tmp_path / "spark warehouse"
    expected = TableLocation.of(folder)
    assert expected.uri == str(folder) and expected.is_local
    for spark_named in (f"file:{folder}", f"file://{folder}", f"file://{str(folder).replace(' ', '%20')}"):
        assert TableLocation.of(spark_named) == expected, spark_named


def test_children_parents_and_names_of_a_local_folder(tmp_path: Path) -> None:
    tables = TableLocation.of(tmp_path)
    silver = tables.child("silver.db")
    assert silver.name == "silver.db" and silver.parent == tables
    assert tables.child("gold.db/gold_a_player_agg").name == "gold_a_player_agg"


def test_child_folders_lists_only_folders_sorted(tmp_path: Path) -> None:
    for name in ("silver_b", "silver_a", "silver_quarantine"):
        (tmp_path / name).mkdir()
    (tmp_path / "notes.txt").write_text("not a table")
    assert TableLocation.of(tmp_path).child_folders() == ["silver_a", "silver_b", "silver_quarantine"]
    assert TableLocation.of(tmp_path / "missing").child_folders() == []


def test_an_s3_prefix_keeps_its_credentials_through_child_and_parent() -> None:
    tables = TableLocation(
        "s3://lake/gamelake/spark-warehouse", S3Access("AKIDEXAMPLE", "secret", "eu-west-1")
    )
    silver = tables.child("silver.db")
    assert (silver.uri, silver.bucket, silver.key("x")) == (
        "s3://lake/gamelake/spark-warehouse/silver.db",
        "lake",
        "gamelake/spark-warehouse/silver.db/x",
    )
    assert silver.parent.uri == tables.uri and silver.parent.access is tables.access
    assert silver.parent.storage_options["AWS_REGION"] == "eu-west-1"


def test_the_writers_s3_client_signs_each_request_with_the_keys_of_then() -> None:
    from botocore.awsrequest import AWSResponse

    tokens = ["t1"]
    access = S3Access(
        "ASIAEXAMPLE", "secret", endpoint_url="http://127.0.0.1:9", credentials=renewing(tokens)
    )
    client = s3_client(access)
    sent: list[tuple[str, bytes]] = []

    def answer(request: Any, **_: Any) -> AWSResponse:  # in place of the server
        sent.append((request.url, request.headers["X-Amz-Security-Token"]))
        return AWSResponse(request.url, 200, {}, _NoBody())

    client.meta.events.register("before-send.s3", answer)
    client.head_object(Bucket="lake", Key="k")
    tokens.append("t2")  # botocore renewed them
    client.head_object(Bucket="lake", Key="k")
    assert sent == [("http://127.0.0.1:9/lake/k", b"t1"), ("http://127.0.0.1:9/lake/k", b"t2")]


class _NoBody:
    def stream(self, **_: Any) -> Iterator[bytes]:
        return iter([b""])
