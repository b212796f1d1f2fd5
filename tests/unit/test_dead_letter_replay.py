"""``ingest dlq replay`` on local Delta tables: a replay that another one overtook lands nothing twice.

The registry is a stand-in (schema id N is event schema version N); the race is made by running
a whole second replay in the middle of the first, after its bronze check and before its commit.
"""

from __future__ import annotations

import pytest
from confluent_kafka import Message
from deltalake import DeltaTable
from gamelake_dev.demo_schemas import load_version

from ingest.core.errors import SchemaLookupError
from ingest.core.settings.ingest_settings import IngestSettings
from ingest.landing.decode import wire_format as wire
from ingest.landing.delta.bronze_writer import BronzeWriter
from ingest.landing.delta.fences import Landing
from ingest.landing.records import DeadLetter, TopicPartition
from ingest.landing.side_tables.dead_letters import DeltaDeadLetters, to_table
from ingest.ops import dlq_command as dead_letter_commands
from ingest.ops.dlq_command import replay, replay_app_id, select
from tests.demo_registry import DemoRegistry

TOPIC = "events"


_Registry = DemoRegistry


@pytest.fixture
def settings(tmp_path, monkeypatch) -> IngestSettings:
    monkeypatch.setattr(dead_letter_commands, "SchemaRegistryClient", _Registry)
    return IngestSettings(warehouse_dir=tmp_path, topics=[TOPIC], metrics_port=0)


def _letters(offsets: range) -> list[DeadLetter]:
    """Records of schema version 2 that were dead-lettered while the registry did not know it."""
    v2 = load_version(2).message_class
    letters = []
    for offset in offsets:
        value = wire.frame(2, v2(event_id=f"e{offset}", score=offset).SerializeToString())
        record = Message(topic=TOPIC, partition=0, offset=offset, key=b"k", value=value, timestamp=(1, 1))
        error = SchemaLookupError("schema id 2 is not registered", topic=TOPIC, partition=0, offset=offset)
        letters.append(DeadLetter(record, error, 2))
    return letters


def _dead_letters(settings: IngestSettings, offsets: range) -> None:
    sink = DeltaDeadLetters(settings.dead_letters_path, settings.app_id)
    sink.write(_letters(offsets), {TopicPartition(TOPIC, 0): offsets[-1]}, "b0")


def _bronze_offsets(settings: IngestSettings) -> list[int]:
    return sorted(DeltaTable(str(settings.bronze_path)).to_pyarrow_table()["_kafka_offset"].to_pylist())


def _overtaken_by(monkeypatch, replay_in_between) -> None:
    """Run ``replay_in_between`` once, when the first replay has checked bronze and written its files."""
    write_files = BronzeWriter.write_files
    started: list[bool] = []

    def files_then_the_other_replay(writer, table):
        adds = write_files(writer, table)
        if not started:  # the other replay writes files too: it runs straight through
            started.append(True)
            replay_in_between()
        return adds

    monkeypatch.setattr(BronzeWriter, "write_files", files_then_the_other_replay)


def test_a_replay_overtaken_by_another_lands_nothing_twice_and_counts_what_the_other_landed(
    settings, monkeypatch
):
    _dead_letters(settings, range(10))
    letters = select(settings, None, None, None)
    other: list[dict] = []
    _overtaken_by(monkeypatch, lambda: other.append(replay(settings, letters)))

    mine = replay(settings, letters)

    assert other[0]["landed"] == 10 and other[0]["already_in_bronze"] == 0 and other[0]["fenced"] == 0
    assert mine["landed"] == 0 and mine["already_in_bronze"] == 10 and mine["fenced"] == 1, mine
    assert _bronze_offsets(settings) == list(range(10))
    bronze = DeltaTable(str(settings.bronze_path))
    assert bronze.transaction_version(replay_app_id(settings.app_id)) == 0, "one replay commit"
    assert select(settings, None, None, None).num_rows == 0, "every dead letter is stamped replayed"


def test_a_replay_overtaken_by_one_of_some_of_its_letters_lands_the_rest_once(settings, monkeypatch):
    _dead_letters(settings, range(10))
    letters = select(settings, None, None, None)
    other: list[dict] = []
    _overtaken_by(monkeypatch, lambda: other.append(replay(settings, select(settings, None, None, [2, 3]))))

    mine = replay(settings, letters)

    assert other[0]["landed"] == 2
    assert mine["landed"] == 8 and mine["already_in_bronze"] == 2 and mine["fenced"] == 1, mine
    assert _bronze_offsets(settings) == list(range(10))
    bronze = DeltaTable(str(settings.bronze_path))
    assert bronze.transaction_version(replay_app_id(settings.app_id)) == 1, "two replay commits"
    assert select(settings, None, None, None).num_rows == 0


def test_from_the_topic_sink_a_replay_leaves_the_letters_the_service_has_not_passed_to_it(settings):
    # The service published these dead letters, but its bronze commit for 5..7 has not happened:
    # it may read them again and land them itself.
    topic_sink = IngestSettings(
        warehouse_dir=settings.warehouse_dir,
        topics=[TOPIC],
        metrics_port=0,
        dead_letter_sink="topic",
        dead_letter_topic="dlq",
    )
    service = BronzeWriter(settings.bronze_path, settings.app_id)
    service.commit([], {TopicPartition(TOPIC, 0): Landing(None, 4)}, {})
    letters = to_table(_letters(range(3, 8)), "b0")

    first = replay(topic_sink, letters)
    assert first["landed"] == 2 and first["in_flight"] == 3, first
    assert _bronze_offsets(settings) == [3, 4]

    service.commit([], {TopicPartition(TOPIC, 0): Landing(4, 7)}, {})  # the service passed them
    second = replay(topic_sink, letters)
    assert second == {**second, "landed": 3, "already_in_bronze": 2, "in_flight": 0}
    assert _bronze_offsets(settings) == [3, 4, 5, 6, 7]
