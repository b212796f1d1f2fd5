"""The bronze writer on a local Delta table: offsets in the same commit, zombie and app fencing, evolution."""

from __future__ import annotations

import datetime as dt
import random

import pyarrow as pa
import pyarrow.compute as pc
import pytest
from deltalake import DeltaTable
from gamelake_dev.demo_schemas import load_version

from ingest.landing.decode.bronze_columns import field_column
from ingest.landing.delta.bronze_writer import BronzeWriter, _split_by
from ingest.landing.delta.fences import Fence, FencedError, Landing
from ingest.landing.records import TopicPartition

TP = TopicPartition("events", 0)
REPLAY = "app-dlq-replay"  # a writer other than the service, with an app transaction of its own


def _rows(offsets: list[int]) -> pa.Table:
    n = len(offsets)
    ts = pa.array([1_700_000_000_000_000 + o for o in offsets], pa.int64()).cast(pa.timestamp("us", tz="UTC"))
    return pa.table(
        {
            "_kafka_topic": pa.array(["events"] * n),
            "_kafka_partition": pa.array([0] * n, pa.int32()),
            "_kafka_offset": pa.array(offsets, pa.int64()),
            "_kafka_timestamp": ts,
            "_kafka_key": pa.array(["k"] * n),
            "_schema_id": pa.array([1] * n, pa.int32()),
            "event_date": ts.cast(pa.date32()),
        }
    )


def test_rows_and_offset_land_in_one_commit(tmp_path):
    writer = BronzeWriter(tmp_path / "bronze", "app")
    before = writer.state.version
    version = writer.commit(writer.write_files(_rows([0, 1, 2])), {TP: Landing(None, 2)}, {"batch_id": "b1"})
    assert version == before + 1
    assert writer.landed(TP) == 2
    assert DeltaTable(str(tmp_path / "bronze")).to_pyarrow_table().num_rows == 3


def test_a_zombie_commit_for_an_already_landed_range_is_refused(tmp_path):
    live = BronzeWriter(tmp_path / "bronze", "app")
    zombie = BronzeWriter(tmp_path / "bronze", "app")
    zombie_files = zombie.write_files(_rows([0, 1, 2]))
    live.commit(live.write_files(_rows([0, 1, 2])), {TP: Landing(None, 2)}, {})
    with pytest.raises(
        FencedError, match=r"events\[0\]: Delta holds offset 2, this instance resumed from None"
    ):
        zombie.commit(zombie_files, {TP: Landing(None, 2)}, {})
    assert DeltaTable(str(tmp_path / "bronze")).to_pyarrow_table().num_rows == 3


def test_a_lost_commit_race_on_other_partitions_is_retried_with_the_same_files(tmp_path):
    a = BronzeWriter(tmp_path / "bronze", "app")
    b = BronzeWriter(tmp_path / "bronze", "app")
    files = a.write_files(_rows([0, 1]))
    b.commit(b.write_files(_rows([5])), {TopicPartition("events", 1): Landing(None, 5)}, {})
    a.commit(files, {TP: Landing(None, 1)}, {})  # a's snapshot is stale; it re-checks and commits
    assert a.landed(TP) == 1 and a.landed(TopicPartition("events", 1)) == 5


def test_of_two_writers_that_read_the_same_fence_the_first_lands_and_the_second_lands_nothing(tmp_path):
    first = BronzeWriter(tmp_path / "bronze", "app")
    second = BronzeWriter(tmp_path / "bronze", "app")
    read = [w.snapshot().transaction_version(REPLAY) for w in (first, second)]
    assert read == [None, None]
    files = [w.write_files(_rows([7, 8])) for w in (first, second)]  # both found 7 and 8 missing
    first.commit(files[0], {}, {}, [Fence(REPLAY, read[0], 0)])
    refused = rf"{REPLAY}: Delta holds version 0, this commit expected None"
    with pytest.raises(FencedError, match=refused):
        second.commit(files[1], {}, {}, [Fence(REPLAY, read[1], 0)])
    bronze = DeltaTable(str(tmp_path / "bronze"))
    assert sorted(bronze.to_pyarrow_table()["_kafka_offset"].to_pylist()) == [7, 8]
    assert bronze.transaction_version(REPLAY) == 0


def test_a_fenced_commit_that_loses_a_race_to_an_unrelated_commit_retries_and_lands(tmp_path, monkeypatch):
    replay = BronzeWriter(tmp_path / "bronze", "app")
    service = BronzeWriter(tmp_path / "bronze", "app")
    replay.commit(replay.write_files(_rows([9])), {}, {}, [Fence(REPLAY, None, 0)])
    files = replay.write_files(_rows([7]))
    attempts: list[bool] = []
    append = replay.delta_log.append

    def a_service_commit_slips_in_first(*args, **kwargs):
        if not attempts:  # between the fence check and our commit, at the version we aim for
            service.commit(service.write_files(_rows([0, 1])), {TP: Landing(None, 1)}, {})
        attempts.append(append(*args, **kwargs))
        return attempts[-1]

    monkeypatch.setattr(replay.delta_log, "append", a_service_commit_slips_in_first)
    replay.commit(files, {}, {}, [Fence(REPLAY, 0, 1)])
    assert attempts == [False, True]  # the version was taken; read again, re-checked, committed
    bronze = DeltaTable(str(tmp_path / "bronze"))
    assert sorted(bronze.to_pyarrow_table()["_kafka_offset"].to_pylist()) == [0, 1, 7, 9]
    assert bronze.transaction_version(REPLAY) == 1 and bronze.transaction_version("app:events:0") == 1


def test_new_columns_are_added_and_field_numbers_are_kept_per_message_type(tmp_path):
    writer = BronzeWriter(tmp_path / "bronze", "app")
    fields = [field_column(f) for f in load_version(2).message_class.DESCRIPTOR.fields]
    writer.evolve(
        [f.arrow_field for f in fields], {"gamelake.events.GameEvent": {f.name: f.number for f in fields}}
    )
    writer.evolve([], {"studio.Purchase": {"purchase_id": 1}})
    writer.evolve([], {"gamelake.events.GameEvent": {"platform": 11}})  # merged, not replaced
    known = writer.columns()
    assert known.columns["score"].arrow_type == pa.int64()
    assert known.columns["event_timestamp"].arrow_type == pa.timestamp("us", tz="UTC")
    assert known.numbers["gamelake.events.GameEvent"]["score"] == 8
    assert known.numbers["gamelake.events.GameEvent"]["platform"] == 11
    assert known.numbers["studio.Purchase"] == {"purchase_id": 1}
    assert known.unrecorded() == {}


def test_an_evolution_that_loses_a_race_to_another_writers_evolution_reads_bronze_again(
    tmp_path, monkeypatch
):
    service = BronzeWriter(tmp_path / "bronze", "app")
    replay = BronzeWriter(tmp_path / "bronze", "app")
    score, level = pa.field("score", pa.int64()), pa.field("level", pa.int32())
    delta_rs = replay.log.delta_rs
    raced: list[bool] = []

    def the_service_evolves_first():
        handle = delta_rs()
        if not raced:  # after the replay read the table, before its first change commits
            raced.append(True)
            service.evolve([score], {"gamelake.events.GameEvent": {"score": 8}})
        return handle

    monkeypatch.setattr(replay.log, "delta_rs", the_service_evolves_first)
    replay.evolve([score, level], {"gamelake.events.GameEvent": {"level": 9}})
    known = replay.columns()
    assert raced and {"score", "level"} <= set(known.columns)
    assert known.numbers["gamelake.events.GameEvent"] == {"score": 8, "level": 9}


def test_a_batch_splits_by_date_like_one_filter_per_date():
    rng = random.Random(3)
    days = [None, *(dt.date(2026, 11, d) for d in range(1, 8))]
    values = [rng.choice(days) for _ in range(500)]
    dates = pa.chunked_array([pa.array(values[:200], pa.date32()), pa.array(values[200:], pa.date32())])
    data = pa.table({"row": list(range(500))})
    parts = _split_by(data, dates)
    assert [d for d, _ in parts] == list(dict.fromkeys(values))
    for date, part in parts:
        mask = pc.is_null(dates) if date is None else pc.equal(dates, pa.scalar(date, pa.date32()))
        assert part["row"].to_pylist() == data.filter(mask)["row"].to_pylist()
