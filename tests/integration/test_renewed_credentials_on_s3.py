"""The ingest on S3 with keys that botocore renews as they near expiry, as a role's an hour on:
the writer keeps landing, and what delta-rs opens is handed the keys of then.

The keys come from a profile's ``credential_process`` that gives them out 2 minutes from expiry,
so botocore runs it again at every use. S3Proxy answers 501 NotImplemented to an
``x-amz-security-token`` header (it is not among the ``x-amz-`` headers it knows, and the local
stack does not set ``s3proxy.ignore-unknown-headers``), so the process gives the server's own key
pair without a session token: the renewals show in its runs, not in a changed token.
"""

from __future__ import annotations

import pytest

from ingest.core.settings.object_storage import S3Access
from ingest.landing.delta.bronze_writer import BronzeWriter
from ingest.landing.delta.fences import Landing
from ingest.landing.delta.table_location import TableLocation
from ingest.landing.delta.table_scan import scan
from ingest.landing.records import TopicPartition
from ingest.landing.side_tables.event_log import Event, EventLog
from tests.renewing_credentials import renewing_profile
from tests.unit.test_ingest_writer import _rows

pytestmark = pytest.mark.integration

TP = TopicPartition("events", 0)
COMMITS = 5


def test_the_writer_lands_every_commit_while_its_keys_are_renewed(local_s3, on_s3, monkeypatch, tmp_path):
    server = local_s3.credentials()
    profile = renewing_profile(
        tmp_path / "aws", server.access_key_id, server.secret_access_key, with_token=False
    )
    for name in ("AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY", "AWS_SESSION_TOKEN"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("AWS_SHARED_CREDENTIALS_FILE", str(tmp_path / "aws" / "no-credentials"))
    monkeypatch.setenv("AWS_CONFIG_FILE", str(profile.config_file))
    monkeypatch.setenv("AWS_PROFILE", profile.name)
    handed = _runs_at_each_options_read(monkeypatch, profile.runs)

    bronze = TableLocation.of(f"{on_s3}/bronze/game_events")
    writer = BronzeWriter(bronze, "app")
    events = EventLog(bronze.parent.child("ingest_event_log"), "test")  # a delta-rs handle kept open
    ready = profile.runs()
    for offset in range(COMMITS):
        writer.columns()
        adds = writer.write_files(_rows([offset]))
        version = writer.commit(adds, {TP: Landing(offset - 1 if offset else None, offset)}, {})
        events.record(Event("commit", bronze_version=version, rows=1))

    assert profile.runs() > ready, "the keys were renewed while the writer landed"
    landed = bronze.delta_table()
    assert sorted(scan(landed, ["_kafka_offset"])["_kafka_offset"].to_pylist()) == list(range(COMMITS))
    assert landed.transaction_version("app:events:0") == COMMITS - 1
    assert scan(bronze.parent.child("ingest_event_log").delta_table(), ["kind"]).num_rows == COMMITS
    # Every delta-rs open was handed keys renewed for it, none kept from the start.
    assert len(handed) > 2 and handed == sorted(set(handed)), handed


def _runs_at_each_options_read(monkeypatch, runs) -> list[int]:
    """The credential process's run count right after each read of delta-rs's storage options."""
    handed: list[int] = []
    options = S3Access.delta_rs_options

    def counted(access: S3Access) -> dict[str, str]:
        read = options(access)
        handed.append(runs())
        return read

    monkeypatch.setattr(S3Access, "delta_rs_options", counted)
    return handed
