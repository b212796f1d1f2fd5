"""dead_letter_sink=topic: every poison kind goes to the dead-letter topic, whole; the good records land.

Replay from the topic sink after a fix is tested on the private stack (test_ingest_restarts.py),
where schema ids are predictable.
"""

from __future__ import annotations

import uuid

import pytest
from confluent_kafka import Consumer, Producer, TopicPartition
from gamelake_dev.demo_schemas import load_version
from gamelake_dev.producer.publish import ensure_topic, register_versions

from ingest.core.settings.ingest_settings import load_settings
from ingest.landing.decode import wire_format as wire
from ingest.ops.dlq_command import read_topic, select
from tests.integration.ingest_support import (
    bronze,
    kafka_coordinates,
    registry_client,
    run_service,
    service_env,
)
from tests.integration.test_ingest_dead_letters import _score_as_string, _variant

pytestmark = pytest.mark.integration


def _read_all(bootstrap: str, topic: str) -> list:
    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": f"check-{uuid.uuid4().hex}"})
    high = consumer.get_watermark_offsets(TopicPartition(topic, 0), timeout=10)[1]
    consumer.assign([TopicPartition(topic, 0, 0)])
    messages: list = []
    while len(messages) < high:
        batch = consumer.consume(1000, timeout=1)
        assert batch or len(messages) < high, "the dead-letter topic ended early"
        messages += [m for m in batch if m.error() is None]
    consumer.close()
    return messages


@pytest.fixture(scope="module")
def topic_sink(stack, tmp_path_factory):
    topic = f"test-dlt-{uuid.uuid4().hex[:10]}"
    dlq = f"{topic}-dead-letters"
    warehouse = tmp_path_factory.mktemp("warehouse")
    ensure_topic(stack.endpoints(topic), partitions=1)
    ensure_topic(stack.endpoints(dlq), partitions=1)
    register_versions(stack.endpoints(topic), [2])
    v2 = load_version(2).message_class
    good_id = registry_client(stack.registry_url).get_latest_version(f"{topic}-value").schema_id
    type_id, type_class = _variant(stack, topic, _score_as_string)
    payload = v2(event_id="x", game_name="space_raiders", device_id="d" * 40).SerializeToString()
    poison = {
        "framing:wrong_magic": b"\x01" + wire.frame(good_id, payload)[1:],
        "framing:empty": b"",
        "framing:short": b"\x00\x00\x01",
        "framing:null": None,
        "decode:truncated": wire.frame(good_id, payload[:-10]),
        "decode:invalid": wire.frame(good_id, b"\xff\xff\xff\xff\x0f\x0f"),
        "schema_lookup:unknown_id": wire.frame(987654, payload),
        "schema_guard:type_change": wire.frame(
            type_id, type_class(event_id="t", score="hi").SerializeToString()
        ),
    }
    producer = Producer({"bootstrap.servers": stack.bootstrap_servers, "enable.idempotence": True})
    for i, value in enumerate(poison.values()):
        good = wire.frame(good_id, v2(event_id=f"good-{i}", game_name="space_raiders").SerializeToString())
        producer.produce(topic, good, b"g", partition=0)
        producer.produce(
            topic, value, f"poison-{i}".encode(), partition=0, headers=[("trace", f"t{i}".encode())]
        )
    assert producer.flush(30) == 0
    env = service_env(
        stack,
        topic,
        warehouse,
        dead_letter_sink="topic",
        dead_letter_topic=dlq,
        unknown_schema_retries=1,
        registry_retry_backoff_s=0.1,
    )
    log = warehouse / "ingest.log"
    assert run_service(env, log=log) == 0, log.read_text()[-3000:]
    return topic, dlq, warehouse, poison


def test_each_poison_kind_goes_to_the_topic_with_bytes_key_headers_coordinates_stage_error_and_time(
    topic_sink, stack
):
    topic, dlq, warehouse, poison = topic_sink
    letters = _read_all(stack.bootstrap_servers, dlq)
    assert len(letters) == len(poison)
    by_offset = {int(dict(m.headers())["gamelake.offset"]): m for m in letters}
    originals = {m.offset(): m for m in _read_all(stack.bootstrap_servers, topic)}
    for i, (kind, value) in enumerate(poison.items()):
        offset = 2 * i + 1
        letter = by_offset[offset]
        headers = dict(letter.headers())
        assert letter.value() == value, kind
        assert letter.key() == f"poison-{i}".encode()
        assert headers["trace"] == f"t{i}".encode()  # the original headers travel along
        assert headers["gamelake.topic"] == topic.encode() and headers["gamelake.partition"] == b"0"
        assert headers["gamelake.stage"].decode() == kind.split(":")[0]
        assert f"{topic}[0]@{offset}" in headers["gamelake.error"].decode()
        assert int(headers["gamelake.timestamp_ms"]) == originals[offset].timestamp()[1]
        assert letter.timestamp()[1] >= originals[offset].timestamp()[1]  # when it was dead-lettered
    assert not (warehouse / "bronze" / "dead_letters").exists()  # the topic, not the table


def test_good_records_land_and_bronze_plus_topic_account_for_every_offset(topic_sink, stack):
    topic, dlq, warehouse, poison = topic_sink
    rows = bronze(warehouse)
    assert sorted(rows["event_id"].to_pylist()) == sorted(f"good-{i}" for i in range(len(poison)))
    landed = [(0, o) for o in rows["_kafka_offset"].to_pylist()]
    letters = [
        (0, int(dict(m.headers())["gamelake.offset"])) for m in _read_all(stack.bootstrap_servers, dlq)
    ]
    assert len(landed) + len(letters) == len(set(landed) | set(letters))  # no offset twice
    assert set(landed) | set(letters) == kafka_coordinates(stack.bootstrap_servers, topic)


def test_dlq_list_reads_the_topic_sink(topic_sink, stack):
    topic, dlq, warehouse, poison = topic_sink
    settings = load_settings(
        bootstrap_servers=stack.bootstrap_servers,
        registry_url=stack.registry_url,
        topics=[topic],
        warehouse_dir=warehouse,
        dead_letter_sink="topic",
        dead_letter_topic=dlq,
    )
    table = read_topic(settings)
    assert sorted(table["_kafka_offset"].to_pylist()) == [2 * i + 1 for i in range(len(poison))]
    assert table["_kafka_headers"].to_pylist()[0][0]["key"] == "trace"
    decode = select(settings, "decode", None, None)
    assert sorted(decode["_kafka_offset"].to_pylist()) == [9, 11]
