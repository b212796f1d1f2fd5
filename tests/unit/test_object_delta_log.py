"""ObjectDeltaLog's answers to what a store says to a conditional put (the store is a stand-in)."""

from __future__ import annotations

import botocore.exceptions
import pytest

from ingest.landing.delta.object_delta_log import ObjectDeltaLog
from ingest.landing.delta.table_location import TableLocation


class _Refusing:
    """A client whose put answers ``status``, as an S3-compatible store may."""

    exceptions = botocore.exceptions

    def __init__(self, status: int) -> None:
        self.status = status
        self.puts: list[dict] = []

    def put_object(self, **request):
        self.puts.append(request)
        error = {"Error": {"Code": str(self.status)}, "ResponseMetadata": {"HTTPStatusCode": self.status}}
        raise botocore.exceptions.ClientError(error, "PutObject")


def _log(status: int) -> tuple[ObjectDeltaLog, _Refusing]:
    location = TableLocation("s3://lake/prefix/bronze/game_events")
    client = _Refusing(status)
    location.__dict__["s3"] = client  # the cached client
    return ObjectDeltaLog(location), client


@pytest.mark.parametrize("status", [409, 412])
def test_a_lost_race_is_false_and_leaves_blind_appends_on(status):
    log, client = _log(status)
    assert log.append(5, [], [], {}, ["event_date"]) is False
    assert log.refused is None
    put = client.puts[0]
    assert put["Key"] == "prefix/bronze/game_events/_delta_log/00000000000000000005.json"
    assert put["IfNoneMatch"] == "*" and put["Bucket"] == "lake"


@pytest.mark.parametrize("status", [400, 501])
def test_a_store_without_conditional_writes_turns_blind_appends_off_saying_why(status):
    log, _ = _log(status)
    assert log.append(5, [], [], {}, ["event_date"]) is False
    assert log.refused is not None and "refuses conditional writes" in log.refused


def test_any_other_error_is_raised():
    log, _ = _log(403)
    with pytest.raises(botocore.exceptions.ClientError):
        log.append(5, [], [], {}, ["event_date"])
