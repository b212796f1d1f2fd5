"""The landing units on their own: batch, ownership, rebalance, lander, compaction schedule, health.

Real Delta tables (delta-rs on a temp folder) and real confluent-kafka ``Message`` objects; the
one stand-in is a consumer that records seeks and assignments, since these units only call it.
"""

from __future__ import annotations

import os
import time
from types import SimpleNamespace

import pytest
from confluent_kafka import OFFSET_BEGINNING, Message
from confluent_kafka import TopicPartition as KafkaTopicPartition
from deltalake import DeltaTable
from gamelake_dev.demo_schemas import load_version

from ingest.core.metrics.prometheus import REGISTRY
from ingest.core.settings.ingest_settings import IngestSettings
from ingest.landing.decode import wire_format
from ingest.landing.decode.decoder import Decoder
from ingest.landing.decode.schema_guard import KnownColumns
from ingest.landing.delta.bronze_writer import BronzeWriter
from ingest.landing.delta.fences import FencedError, Landing
from ingest.landing.kafka.ownership import PartitionOwnership
from ingest.landing.kafka.rebalance import RebalanceHandler
from ingest.landing.records import TopicPartition
from ingest.landing.service import batch as batch_module
from ingest.landing.service.batch import Batch
from ingest.landing.service.commit_report import report_commit
from ingest.landing.service.health import health_report
from ingest.landing.service.lander import Lander, StaleBatchError
from ingest.landing.side_tables.dead_letters import DeltaDeadLetters
from ingest.landing.side_tables.event_log import EventLog
from ingest.landing.upkeep.background import BackgroundUpkeep
from ingest.ops.status.delta_commits import adds_rows

TOPIC = "events"


def _message(partition: int, offset: int, value: bytes | None = b"x" * 10) -> Message:
    return Message(topic=TOPIC, partition=partition, offset=offset, key=b"k", value=value, timestamp=(1, 1))


def _settings(tmp_path, **overrides) -> IngestSettings:
    return IngestSettings(warehouse_dir=tmp_path, topics=[TOPIC], metrics_port=0, **overrides)


class RecordingConsumer:
    """Records what the units ask of the consumer."""

    def __init__(self) -> None:
        self.seeks: list[tuple[str, int, int]] = []
        self.assigned: list[tuple[str, int, int]] = []

    def seek(self, partition: KafkaTopicPartition) -> None:
        self.seeks.append((partition.topic, partition.partition, partition.offset))

    def assign(self, partitions: list[KafkaTopicPartition]) -> None:
        self.assigned = [(p.topic, p.partition, p.offset) for p in partitions]


# -- batch ---------------------------------------------------------------------------------
def test_a_batch_is_due_at_rows_bytes_or_age(tmp_path):
    batch = Batch()
    assert not batch.is_due(_settings(tmp_path))  # empty: never due
    batch.add([_message(0, 1), _message(0, 2)])
    assert len(batch) == 2 and batch.bytes == 20
    assert batch.is_due(_settings(tmp_path, flush_rows=2))
    assert batch.is_due(_settings(tmp_path, flush_bytes=20))
    assert not batch.is_due(_settings(tmp_path, flush_interval_s=60))
    batch.started -= 61
    assert batch.is_due(_settings(tmp_path, flush_interval_s=60))
    batch.clear()
    assert len(batch) == 0 and batch.bytes == 0


def test_the_interval_counts_from_the_poll_before_the_first_record(tmp_path, monkeypatch):
    clock = iter([10.0, 10.1, 10.2, 10.3, 11.5, 11.6]).__next__
    monkeypatch.setattr(batch_module.time, "monotonic", clock)
    settings = _settings(tmp_path, flush_interval_s=1.0)
    batch = Batch()  # 10.0
    batch.add([])  # 10.1: an empty poll, nothing waits yet
    batch.add([_message(0, 1)])  # 10.2: the record arrived after 10.1
    assert batch.started == 10.1
    batch.add([_message(0, 2)])  # 10.3: landing then takes 1.2 s
    batch.clear()
    batch.add([_message(0, 3)])  # 11.5: it may have waited since the last poll before landing
    assert batch.started == 10.3
    assert batch.is_due(settings)  # 11.6: 1.3 s after 10.3, not 0.1 s after it was polled


def test_a_batch_keeps_only_the_records_of_owned_partitions():
    batch = Batch()
    batch.add([_message(0, 1), _message(1, 1), _message(0, 2)])
    assert batch.owned(lambda tp: True) is batch.records
    kept = batch.owned(lambda tp: tp.partition == 0)
    assert [(m.partition(), m.offset()) for m in kept] == [(0, 1), (0, 2)]


# -- ownership and rebalance ---------------------------------------------------------------
def test_ownership_starts_at_delta_offsets_and_rewinds_to_them(tmp_path):
    writer = BronzeWriter(tmp_path / "bronze", "app")
    writer.commit([], {TopicPartition(TOPIC, 0): Landing(None, 41)}, {"batch_id": "b0"})
    ownership = PartitionOwnership(writer)
    partitions = [KafkaTopicPartition(TOPIC, 0), KafkaTopicPartition(TOPIC, 1)]
    ownership.take(partitions)
    assert [p.offset for p in partitions] == [42, OFFSET_BEGINNING]
    assert ownership.landed_offsets == {TopicPartition(TOPIC, 0): 41, TopicPartition(TOPIC, 1): None}

    ownership.advance({TopicPartition(TOPIC, 0): Landing(41, 50)})  # in memory only: nothing committed
    consumer = RecordingConsumer()
    ownership.rewind(consumer)  # type: ignore[arg-type]
    assert ownership.landed_offsets[TopicPartition(TOPIC, 0)] == 41
    assert sorted(consumer.seeks) == [(TOPIC, 0, 42), (TOPIC, 1, OFFSET_BEGINNING)]


def test_revoke_lands_the_open_batch_and_lost_drops_it(tmp_path):
    ownership = PartitionOwnership(BronzeWriter(tmp_path / "bronze", "app"))
    calls: list[str] = []
    handler = RebalanceHandler(
        ownership,
        EventLog(tmp_path / "event_log", "test"),
        "test",
        land_open_batch=lambda: calls.append("land"),
        drop_open_batch=lambda reason: calls.append(f"drop:{reason}"),
    )
    consumer = RecordingConsumer()
    handler.on_assign(consumer, [KafkaTopicPartition(TOPIC, 0), KafkaTopicPartition(TOPIC, 1)])  # type: ignore[arg-type]
    assert consumer.assigned == [(TOPIC, 0, OFFSET_BEGINNING), (TOPIC, 1, OFFSET_BEGINNING)]
    handler.on_revoke(consumer, [KafkaTopicPartition(TOPIC, 0)])  # type: ignore[arg-type]
    assert calls == ["land"] and not ownership.owns(TopicPartition(TOPIC, 0)) and ownership.shrank
    handler.on_lost(consumer, [KafkaTopicPartition(TOPIC, 1)])  # type: ignore[arg-type]
    assert calls == ["land", "drop:partitions_lost"] and not ownership.landed_offsets


# -- lander --------------------------------------------------------------------------------
class _Registry:
    def schema(self, schema_id):
        return SimpleNamespace(message=lambda _indexes: load_version(schema_id).message_class.DESCRIPTOR)


def _lander(tmp_path, **settings) -> tuple[Lander, PartitionOwnership, BronzeWriter]:
    s = _settings(tmp_path, **settings)
    writer = BronzeWriter(s.bronze_path, s.app_id)
    event_log = EventLog(s.event_log_path, "test")
    dead_letters = DeltaDeadLetters(s.dead_letters_path, s.app_id)
    lander = Lander(s, writer, Decoder(_Registry(), 0, 0.0), dead_letters, event_log, "test")
    ownership = PartitionOwnership(writer)
    ownership.take([KafkaTopicPartition(TOPIC, 0)])
    return lander, ownership, writer


def _events(offsets: range) -> list[Message]:
    v2 = load_version(2).message_class
    return [
        _message(0, o, wire_format.frame(2, v2(event_id=f"e{o}", game_name="g", score=o).SerializeToString()))
        for o in offsets
    ]


def test_the_lander_commits_rows_dead_letters_and_offsets_together(tmp_path):
    lander, ownership, writer = _lander(tmp_path)
    records = [*_events(range(0, 5)), _message(0, 5, b"not framed")]
    landed = lander.land("b1", records, ownership, last_poll=time.monotonic())
    assert landed.ranges[TopicPartition(TOPIC, 0)].as_dict() == {
        "first_offset": 0,
        "last_offset": 5,
        "rows": 5,
        "dead_letters": 1,
    }
    assert writer.landed(TopicPartition(TOPIC, 0)) == 5  # the dead letter is accounted for too
    bronze = DeltaTable(str(tmp_path / "bronze" / "game_events")).to_pyarrow_table()
    assert sorted(bronze.column("score").to_pylist()) == [0, 1, 2, 3, 4]
    assert DeltaTable(str(tmp_path / "bronze" / "dead_letters")).to_pyarrow_table().num_rows == 1


def test_a_bronze_commit_says_how_many_rows_it_adds_so_readers_know_a_dead_letter_only_batch(tmp_path):
    lander, ownership, _writer = _lander(tmp_path)
    ownership.advance(lander.land("b1", _events(range(0, 4)), ownership, time.monotonic()).landings)
    lander.land("b2", [_message(0, 4, b"not framed")], ownership, time.monotonic())
    bronze = DeltaTable(str(tmp_path / "bronze" / "game_events"))
    only_dead, rows = bronze.history(2)
    assert (rows["gamelake.rows"], only_dead["gamelake.rows"]) == ("4", "0")
    assert adds_rows(rows) and not adds_rows(only_dead)


def test_the_lander_refuses_a_stale_batch_and_a_fenced_one_without_landing(tmp_path):
    lander, ownership, writer = _lander(tmp_path, max_poll_interval_ms=1_000, session_timeout_ms=1_000)
    with pytest.raises(StaleBatchError, match=r"max.poll.interval.ms=1000"):
        lander.land("stale", _events(range(0, 3)), ownership, last_poll=time.monotonic() - 1.0)
    assert writer.landed(TopicPartition(TOPIC, 0)) is None
    # Another instance lands the partition: this one resumed from None and is now a zombie.
    writer.commit([], {TopicPartition(TOPIC, 0): Landing(None, 9)}, {"batch_id": "other"})
    with pytest.raises(FencedError, match=r"Delta holds offset 9"):
        lander.land("zombie", _events(range(0, 3)), ownership, last_poll=time.monotonic())
    assert writer.landed(TopicPartition(TOPIC, 0)) == 9


def test_a_reported_commit_counts_rows_and_dead_letters_and_stamps_its_time(tmp_path):
    lander, ownership, _writer = _lander(tmp_path)
    records = [*_events(range(0, 3)), _message(0, 3, b"not framed")]
    landed = lander.land("b1", records, ownership, last_poll=time.monotonic())
    rows = REGISTRY.get_sample_value("gamelake_ingest_rows_landed_total")
    framing = REGISTRY.get_sample_value("gamelake_ingest_dead_letters_total", {"stage": "framing"})
    before = time.time()
    report_commit(landed, EventLog(tmp_path / "report_log", "test"))
    assert REGISTRY.get_sample_value("gamelake_ingest_rows_landed_total") == rows + 3
    assert (
        REGISTRY.get_sample_value("gamelake_ingest_dead_letters_total", {"stage": "framing"}) == framing + 1
    )
    assert REGISTRY.get_sample_value("gamelake_ingest_last_commit_timestamp_seconds") >= before


# -- compaction schedule and health --------------------------------------------------------
def test_upkeep_runs_every_n_commits_in_a_child_process_and_never_at_zero(tmp_path):
    lander, ownership, _writer = _lander(tmp_path)
    for start in range(0, 30, 10):
        landed = lander.land(f"b{start}", _events(range(start, start + 10)), ownership, time.monotonic())
        ownership.advance(landed.landings)
    bronze, missing = tmp_path / "bronze" / "game_events", tmp_path / "bronze" / "not_a_table"
    never, not_due, due = (BackgroundUpkeep([bronze, missing], every, 48, 168) for every in (0, 2, 3))
    assert never.after_commit(3) is None and never.running is None
    assert not_due.after_commit(3) is None and not_due.running is None
    assert due.after_commit(3) is None, "it starts; the result comes later"
    assert due.running is not None and due.running.pid != os.getpid()
    result = due.reap(wait_s=60)
    assert result is not None and list(result) == ["game_events"], result
    assert result["game_events"]["numFilesAdded"] == 1 and result["game_events"]["numFilesRemoved"] == 3
    assert due.running is None and due.reap() is None


def test_health_fails_on_a_fatal_error_or_a_stalled_loop():
    partitions = [TopicPartition(TOPIC, 1), TopicPartition(TOPIC, 0)]
    ok = health_report("i", False, time.monotonic(), 10_000, partitions, 4)
    assert ok["ok"] is True and ok["partitions"] == ["events[0]", "events[1]"] and ok["commits"] == 4
    assert health_report("i", True, time.monotonic(), 10_000, partitions, 4)["ok"] is False
    assert health_report("i", False, time.monotonic() - 11, 10_000, partitions, 4)["ok"] is False


# -- dead letters and bronze, exactly once across a crash between their commits ---------------
def _crashed_batch(tmp_path, dead: list[int], covers: int):
    """A batch that committed its dead letters ``dead`` (covering up to ``covers``) and then crashed."""
    lander, ownership, writer = _lander(tmp_path)
    letters = _decoded_letters([_message(0, o, b"unframed") for o in dead])
    lander.dead_letters.write(letters, {TopicPartition(TOPIC, 0): covers}, "crashed")
    ownership.rewind(RecordingConsumer())  # type: ignore[arg-type]  # what a restart or a drop does
    return lander, ownership, writer


def _decoded_letters(records):
    return Decoder(_Registry(), 0, 0.0).decode(records, KnownColumns()).dead_letters


def _tables(tmp_path) -> tuple[list[int], list[int]]:
    bronze = DeltaTable(str(tmp_path / "bronze" / "game_events")).to_pyarrow_table()
    dead = DeltaTable(str(tmp_path / "bronze" / "dead_letters")).to_pyarrow_table()
    return sorted(bronze.column("_kafka_offset").to_pylist()), sorted(
        dead.column("_kafka_offset").to_pylist()
    )


def test_a_record_dead_lettered_before_a_crash_stays_out_of_bronze_when_it_decodes_on_retry(tmp_path):
    # Offset 1 was a dead letter (say, its schema id was unknown); after the crash it decodes.
    lander, ownership, writer = _crashed_batch(tmp_path, dead=[1], covers=2)
    landed = lander.land("retry", _events(range(0, 3)), ownership, time.monotonic())
    bronze, dead = _tables(tmp_path)
    assert (bronze, dead) == ([0, 2], [1]), "in bronze or in dead letters, never both"
    assert landed.ranges[TopicPartition(TOPIC, 0)].as_dict() == {
        "first_offset": 0,
        "last_offset": 2,
        "rows": 2,
        "dead_letters": 1,
    }
    assert writer.landed(TopicPartition(TOPIC, 0)) == 2


def test_a_record_that_became_a_dead_letter_on_retry_is_written_though_below_the_cover(tmp_path):
    # The crashed batch covered offset 2 but landed it as a row that never committed; on retry
    # offset 2 is a dead letter (say, the schema guard now refuses it).
    lander, ownership, _writer = _crashed_batch(tmp_path, dead=[1], covers=2)
    records = [*_events(range(0, 2)), _message(0, 2, b"unframed")]
    lander.land("retry", records, ownership, time.monotonic())
    assert _tables(tmp_path) == ([0], [1, 2]), "in bronze or in dead letters, never neither"


def test_bronze_has_the_change_data_feed_on_new_and_existing_tables(tmp_path):
    # silver reads bronze by Delta version through the change data feed: a new bronze table is
    # created with it, and a bronze created before it existed gets it set when the ingest starts
    BronzeWriter(tmp_path / "fresh", "app")
    assert (
        DeltaTable(str(tmp_path / "fresh")).metadata().configuration["delta.enableChangeDataFeed"] == "true"
    )

    import pyarrow as pa

    old = tmp_path / "old"
    DeltaTable.create(str(old), pa.schema([("event_date", pa.date32())]), partition_by=["event_date"])
    assert "delta.enableChangeDataFeed" not in DeltaTable(str(old)).metadata().configuration
    BronzeWriter(old, "app")
    assert DeltaTable(str(old)).metadata().configuration["delta.enableChangeDataFeed"] == "true"
