"""Every bronze column the writer writes has Delta statistics: filters through delta-rs work and skip files.

Without min/max, delta-rs's dataset answered a filter on a string or boolean column with no rows.
"""

from __future__ import annotations

import decimal

import pyarrow as pa
import pyarrow.dataset as ds
import pytest
from deltalake import DeltaTable

from ingest.landing.delta.bronze_writer import BronzeWriter
from ingest.landing.delta.fences import Landing
from ingest.landing.delta.statistics import STRING_STATS_PREFIX
from ingest.landing.records import TopicPartition

TP = TopicPartition("t", 0)
EXTRA = [
    pa.field("name", pa.string()),
    pa.field("long_name", pa.string()),
    pa.field("flag", pa.bool_()),
    pa.field("big", pa.decimal128(20, 0)),
    pa.field("ratio", pa.float64()),
    pa.field("maybe", pa.string()),
]


def _file(part: int, rows: int = 3) -> pa.Table:
    ts = pa.array([1_700_000_000_000_000 + i for i in range(rows)], pa.int64()).cast(
        pa.timestamp("us", tz="UTC")
    )
    return pa.table(
        {
            "_kafka_topic": ["t"] * rows,
            "_kafka_partition": pa.array([0] * rows, pa.int32()),
            "_kafka_offset": pa.array(range(part * rows, part * rows + rows), pa.int64()),
            "_kafka_timestamp": ts,
            "_kafka_key": [f"key-{part}"] * rows,
            "_schema_id": pa.array([1] * rows, pa.int32()),
            "name": [f"player-{part}"] * rows,
            "long_name": ["é" * 40 + str(part)] * rows,  # past the 32-character prefix, not ASCII
            "flag": [part == 1] * rows,
            "big": pa.array([decimal.Decimal(2**64 - 1 - part)] * rows, pa.decimal128(20, 0)),
            "ratio": [part + 0.5] * rows,
            "maybe": pa.array([None] * rows, pa.string()) if part != 2 else ["here"] * rows,
            "event_date": ts.cast(pa.date32()),
        }
    )


def write_bronze(path) -> None:
    """Three commits of three rows each, by the ingest's own writer."""
    writer = BronzeWriter(path, "app")
    writer.evolve(list(EXTRA), {})
    last = None
    for part in range(3):
        table = _file(part)
        writer.commit(writer.write_files(table), {TP: Landing(last, part * 3 + 2)}, {"batch_id": str(part)})
        last = part * 3 + 2


@pytest.fixture
def bronze(tmp_path) -> ds.Dataset:
    write_bronze(tmp_path / "bronze")
    return DeltaTable(str(tmp_path / "bronze")).to_pyarrow_dataset()


@pytest.mark.parametrize(
    ("predicate", "files"),  # each file holds 3 rows
    [
        (ds.field("name") == "player-1", 1),
        (ds.field("_kafka_key") == "key-2", 1),
        (ds.field("flag") == True, 1),  # noqa: E712 - a dataset expression, not a Python comparison
        (ds.field("big") == pa.scalar(decimal.Decimal(2**64 - 2), pa.decimal128(20, 0)), 1),
        (ds.field("ratio") > 1.0, 2),
        (ds.field("maybe") == "here", 1),
        (ds.field("maybe").is_null(), 2),
        (ds.field("long_name") == "é" * 40 + "1", 3),  # same 32-character prefix: no file can be skipped
    ],
)
def test_a_filter_on_any_column_returns_its_rows_and_skips_the_other_files(bronze, predicate, files):
    expected = bronze.to_table().filter(predicate).num_rows  # filtered in memory, after a full read
    assert bronze.to_table(filter=predicate).num_rows == expected > 0
    assert len(list(bronze.get_fragments(filter=predicate))) == files


def test_string_statistics_are_truncated_prefixes_that_still_bound_every_value(tmp_path):
    writer = BronzeWriter(tmp_path / "bronze", "app")
    writer.evolve(list(EXTRA), {})
    adds = writer.write_files(_file(0))
    import json

    stats = json.loads(adds[0].stats)
    value = "é" * 40 + "0"
    assert stats["minValues"]["long_name"] == value[:STRING_STATS_PREFIX] <= value
    assert (
        stats["maxValues"]["long_name"] > value
        and len(stats["maxValues"]["long_name"]) == STRING_STATS_PREFIX + 1
    )
    assert stats["minValues"]["flag"] is False and stats["maxValues"]["big"] == str(2**64 - 1)
    assert "maybe" not in stats["minValues"] and stats["nullCount"]["maybe"] == 3
