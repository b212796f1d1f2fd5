"""``scan`` and ``distinct`` give back the table's own Arrow types, whatever DataFusion returns."""

from __future__ import annotations

import datetime as dt

import pyarrow as pa
from deltalake import DeltaTable, write_deltalake

from ingest.landing.delta.table_scan import distinct, scan

ROWS = pa.table(
    {
        "Stage": pa.array(["decode", None, "decode"]),
        "value": pa.array([b"\x00raw", b"x", b"y"]),
        "at": pa.array(
            [dt.datetime(2026, 1, 1), None, dt.datetime(2026, 2, 1)], pa.timestamp("us", tz="UTC")
        ),
        "offset": pa.array([1, 2, 3], pa.int64()),
        "day": pa.array([dt.date(2026, 1, 1)] * 3),
    }
)


def _table(tmp_path) -> DeltaTable:
    write_deltalake(str(tmp_path / "t"), ROWS, partition_by=["day"])
    return DeltaTable(str(tmp_path / "t"))


def test_a_whole_scan_has_the_tables_types_not_views(tmp_path):
    table = _table(tmp_path)
    scanned = scan(table)
    assert scanned.schema == pa.schema(table.schema())
    assert sorted(scanned.to_pylist(), key=lambda r: r["offset"]) == ROWS.to_pylist()


def test_a_scan_picks_columns_in_order_and_rows_by_the_condition(tmp_path):
    scanned = scan(_table(tmp_path), ["value", "Stage"], where='"offset" > 1 AND "at" IS NOT NULL')
    assert scanned.column_names == ["value", "Stage"]
    assert scanned.to_pylist() == [{"value": b"y", "Stage": "decode"}]


def test_distinct_values_keep_their_type(tmp_path):
    values = distinct(_table(tmp_path), "Stage")
    assert values.type == pa.string()
    assert len(values) == 2 and set(values.to_pylist()) == {"decode", None}
