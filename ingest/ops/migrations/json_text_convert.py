"""Old bronze rows -> native columns, one batch at a time.

Each row's message is rebuilt from the JSON texts of its converted columns (the texts were
``MessageToDict`` of the field, so ``ParseDict`` reverses them) and then read by the decoder's
own column readers: a value is exactly what decoding the record gives today, presence and
empty repeated fields included. Rows are grouped by (schema id, message type), so one message
class reads a group at once.
"""

from __future__ import annotations

import json
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
from google.protobuf import json_format
from google.protobuf.message import Message

from ingest.landing.decode.bronze_columns import type_name
from ingest.ops.migrations.json_text_plan import MigrationError, MigrationPlan, TypeKey, TypePlan


class UnparsableText(MigrationError):
    """A JSON text column of some row cannot be read back into its field."""


def convert(batch: pa.Table, plan: MigrationPlan, target: pa.Schema) -> pa.Table:
    """``batch`` (rows of one bronze file) with ``target``'s columns: the converted and added ones
    rebuilt, every other one as the file holds it, and null where the file predates a column."""
    native = _native_columns(batch, plan)
    arrays = []
    for f in target:
        if f.name in native:
            arrays.append(native[f.name])
        elif f.name in batch.column_names:
            arrays.append(batch[f.name].combine_chunks())
        else:
            arrays.append(pa.nulls(batch.num_rows, f.type))
    return pa.Table.from_arrays(arrays, names=target.names)


def _native_columns(batch: pa.Table, plan: MigrationPlan) -> dict[str, pa.Array]:
    keys = zip(batch["_schema_id"].to_pylist(), batch["_message_type"].to_pylist(), strict=True)
    rows_of: dict[TypeKey, list[int]] = {}
    for row, key in enumerate(keys):
        rows_of.setdefault(key, []).append(row)
    pieces: dict[str, list[tuple[list[int], pa.Array]]] = {name: [] for name in plan.new_types}
    for key, rows in rows_of.items():
        type_plan = plan.types.get(key)
        if type_plan is None or not type_plan.outputs:
            continue
        messages = _messages(batch, rows, type_plan)
        for column in type_plan.outputs:
            array = column.read(messages).cast(plan.new_types[column.name])  # structs widened
            pieces[column.name].append((rows, array))
    return {name: _placed(batch, name, found, plan.new_types[name]) for name, found in pieces.items()}


def _messages(batch: pa.Table, rows: list[int], type_plan: TypePlan) -> list[Message]:
    """The message of each row in ``rows``, rebuilt from its converted columns' JSON texts."""
    indices = pa.array(rows, pa.int64())
    present = [c.name for c in type_plan.converted if c.name in batch.column_names]
    texts = {name: batch[name].take(indices).to_pylist() for name in present}
    cls = type_plan.message_class
    messages = []
    for i, row in enumerate(rows):
        fields = {name: column[i] for name, column in texts.items() if column[i] is not None}
        try:
            messages.append(_parsed(cls, fields))
        except (ValueError, json_format.ParseError):
            raise _unparsable(batch, row, cls, fields) from None
    return messages


def _parsed(cls: type[Message], texts: dict[str, str]) -> Message:
    values = {name: json.loads(text) for name, text in texts.items()}
    return json_format.ParseDict(values, cls(), ignore_unknown_fields=True)


def _unparsable(batch: pa.Table, row: int, cls: type[Message], texts: dict[str, str]) -> UnparsableText:
    """The error naming the first column whose text alone fails, with the row's Kafka coordinates."""
    for name, text in texts.items():
        try:
            _parsed(cls, {name: text})
        except (ValueError, json_format.ParseError) as err:
            where = _coordinates(batch, row)
            shown = text if len(text) <= 80 else text[:77] + "..."
            return UnparsableText(
                f"column {name!r} of the row {where} ({cls.DESCRIPTOR.full_name}) holds {shown!r}, "
                f"which is not the JSON of that field: {err}. Nothing was changed. Fix: correct or "
                "delete that row in bronze (it was not written by the ingest), then run the migration again"
            )
    return UnparsableText(f"the row {_coordinates(batch, row)} cannot be rebuilt; nothing was changed")


def _coordinates(batch: pa.Table, row: int) -> str:
    value: dict[str, Any] = {
        n: batch[n][row].as_py() for n in ("_kafka_topic", "_kafka_partition", "_kafka_offset")
    }
    return f"{value['_kafka_topic']}[{value['_kafka_partition']}]@{value['_kafka_offset']}"


def _placed(
    batch: pa.Table, name: str, found: list[tuple[list[int], pa.Array]], arrow_type: pa.DataType
) -> pa.Array:
    """One column of the batch from its pieces (rows, values). The rows no piece covers keep their
    value when the column keeps its type (a plain text field of another message type), else read
    null; one whose text would be lost so is refused."""
    old = batch[name].combine_chunks() if name in batch.column_names else pa.nulls(batch.num_rows, arrow_type)
    arrays = [array for _, array in found]
    take = np.full(batch.num_rows, -1, dtype=np.int64)
    start = 0
    for rows, array in found:
        take[rows] = np.arange(start, start + len(array))
        start += len(array)
    uncovered = np.flatnonzero(take < 0)
    if old.type != arrow_type:
        lost = pc.sum(pc.is_valid(old.take(pa.array(uncovered)))).as_py() if len(uncovered) else 0
        if lost:
            raise MigrationError(
                f"column {name!r} holds text in {lost} rows whose message type has no such JSON "
                f"field to read as {type_name(arrow_type)}; nothing was changed"
            )
        old = pa.nulls(batch.num_rows, arrow_type)
    take[uncovered] = start + uncovered
    return pa.concat_arrays([*arrays, old]).take(pa.array(take))
