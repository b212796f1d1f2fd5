"""Delta file statistics of a Parquet file's rows: record count, null counts, min and max.

Readers skip files by them (delta-rs, Spark), so they follow Delta's protocol exactly: strings
truncated to a prefix that still bounds every value, timestamps in milliseconds.
"""

from __future__ import annotations

import json
import time

import pyarrow as pa
import pyarrow.compute as pc

STRING_STATS_PREFIX = 32  # Delta's usual truncation of string statistics
# Appended to a truncated maximum: above every code point, so it still bounds every value.
_ABOVE_ANY_CHARACTER = "\U0010ffff"


def file_statistics(table: pa.Table) -> str:
    """Delta file statistics: record count, null counts, min/max of every column that has them.

    Without min/max a column cannot be used to skip files, and delta-rs's dataset then answers
    a filter on it with no rows at all; binary columns have none in Delta's protocol. A struct's
    statistics nest, field by field; arrays and maps have a null count only.
    """
    nulls, mins, maxs = _column_stats(table.column_names, table.columns)
    return json.dumps(
        {"numRecords": table.num_rows, "minValues": mins, "maxValues": maxs, "nullCount": nulls}
    )


def _column_stats(
    names: list[str], columns: list[pa.ChunkedArray]
) -> tuple[dict[str, object], dict[str, object], dict[str, object]]:
    nulls: dict[str, object] = {}
    mins: dict[str, object] = {}
    maxs: dict[str, object] = {}
    for name, column in zip(names, columns, strict=True):
        if pa.types.is_struct(column.type):
            # flatten() gives each field with its parent's nulls, as Delta counts them.
            inner = _column_stats([f.name for f in column.type], column.flatten())
            nulls[name] = inner[0]
            for target, found in zip((mins, maxs), inner[1:], strict=True):
                if found:
                    target[name] = found
            continue
        nulls[name] = column.null_count
        bounds = _bounds(column) if column.null_count < len(column) else None
        if bounds is not None:
            mins[name], maxs[name] = bounds
    return nulls, mins, maxs


def _bounds(column: pa.ChunkedArray) -> tuple[object, object] | None:
    """(min, max) as Delta writes them, or None where the type has no statistics."""
    kind = column.type
    if pa.types.is_floating(kind) and pc.any(pc.is_nan(column)).as_py():
        return None
    if not (
        pa.types.is_integer(kind)
        or pa.types.is_floating(kind)
        or pa.types.is_timestamp(kind)
        or pa.types.is_string(kind)
        or pa.types.is_boolean(kind)
        or pa.types.is_decimal(kind)
    ):
        return None
    extremes = pc.min_max(column)
    low, high = extremes["min"].as_py(), extremes["max"].as_py()
    if pa.types.is_timestamp(kind):
        # Delta stores millisecond precision: floor the minimum, ceil the maximum.
        low_us, high_us = (extremes[k].cast(pa.int64()).as_py() for k in ("min", "max"))
        return _iso_ms(low_us // 1000), _iso_ms(-(-high_us // 1000))
    if pa.types.is_string(kind):
        if len(high) > STRING_STATS_PREFIX:
            high = high[:STRING_STATS_PREFIX] + _ABOVE_ANY_CHARACTER
        return low[:STRING_STATS_PREFIX], high
    if pa.types.is_decimal(kind):
        return str(low), str(high)  # exact: delta-rs compares a JSON float inexactly
    return low, high


def _iso_ms(epoch_ms: int) -> str:
    seconds, millis = divmod(epoch_ms, 1000)
    return time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(seconds)) + f".{millis:03d}Z"
