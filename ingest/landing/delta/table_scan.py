"""Read a Delta table's rows through delta-rs's own engine (DataFusion), not pyarrow's dataset.

pyarrow's dataset reads a table on S3 through delta-rs's Python filesystem handler. Its I/O
threads can still hold Python file objects when the interpreter shuts down, and the process then
aborts ("terminate called without an active exception", delta-io/delta-rs#2184): 16 of 40 short
``to_pyarrow_table`` runs here, after their output was printed. DataFusion reads in Rust: 0 of 40.

DataFusion hands strings and binaries back as views; a scan casts them to the table's own types,
so callers see what ``to_pyarrow_table`` gave them.
"""

from __future__ import annotations

from collections.abc import Sequence

import pyarrow as pa
from deltalake import DeltaTable, QueryBuilder

_NAME = "scanned"


def scan(table: DeltaTable, columns: Sequence[str] | None = None, where: str | None = None) -> pa.Table:
    """``columns`` (all when None) of the rows matching the SQL condition ``where``.

    ``where`` is built by code from constants and numbers, never from input text.
    """
    schema = pa.schema(table.schema())
    if columns is not None:
        schema = pa.schema([schema.field(name) for name in columns])
    query = f"SELECT {', '.join(quoted(name) for name in schema.names)} FROM {_NAME}"
    if where:
        query += f" WHERE {where}"
    rows = pa.table(QueryBuilder().register(_NAME, table).execute(query))
    return rows.cast(schema)


def quoted(name: str) -> str:
    """``name`` as a SQL identifier: DataFusion folds unquoted names to lower case."""
    return '"' + name.replace('"', '""') + '"'


def distinct(table: DeltaTable, column: str) -> pa.Array:
    """The distinct values of ``column``: the engine holds them, not the whole column."""
    query = f"SELECT DISTINCT {quoted(column)} FROM {_NAME}"
    values = pa.table(QueryBuilder().register(_NAME, table).execute(query)).column(0)
    return values.combine_chunks().cast(pa.schema(table.schema()).field(column).type)
