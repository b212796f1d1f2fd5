"""The landing tables on disk: a table opened or created with its properties, and a Parquet
file written for a commit that does not exist yet."""

from __future__ import annotations

import os
import uuid
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
from deltalake import DeltaTable
from deltalake.exceptions import DeltaError
from deltalake.transaction import AddAction

from ingest.core.errors import ConfigError
from ingest.landing.decode.bronze_columns import PARTITION_COLUMN
from ingest.landing.delta.statistics import file_statistics
from ingest.landing.delta.table_properties import TABLE_CONFIGURATION, with_properties


def ensure_table(
    path: Path,
    schema: pa.Schema,
    partition_by: list[str] | None,
    name: str,
    configuration: dict[str, str] | None = None,
) -> DeltaTable:
    """Open the Delta table at ``path``, creating it (with ``schema``) when missing.

    ``configuration`` adds table properties to the defaults; a table created before they
    existed gets them set once, in a metadata commit of its own.
    """
    wanted = {**TABLE_CONFIGURATION, **(configuration or {})}
    usable_folder(path, name)
    if DeltaTable.is_deltatable(str(path)):
        return with_properties(DeltaTable(str(path)), configuration or {})
    try:
        return DeltaTable.create(
            str(path),
            schema,
            mode="ignore",
            partition_by=partition_by,
            name=name,
            configuration=wanted,
        )
    except DeltaError as err:
        raise ConfigError(f"cannot create the {name} Delta table at {path}: {err}") from None


def usable_folder(path: Path, name: str) -> None:
    """ConfigError unless ``path`` is (or can be made) a folder this user writes."""
    try:
        path.mkdir(parents=True, exist_ok=True)
        if not os.access(path, os.W_OK):
            raise PermissionError(f"{path} is not writable")
    except OSError as err:
        raise ConfigError(
            f"cannot use {path} for the {name} table: {err.strerror or err}; check warehouse_dir "
            "(GAMELAKE_INGEST_WAREHOUSE_DIR): a directory this user can create and write"
        ) from None


def write_part(
    root: Path, date: str | None, part: pa.Table, modified_ms: int, data_change: bool = True
) -> AddAction:
    """Write ``part`` (rows of one ``event_date``, without that column) as one parquet file of the
    table at ``root``, with its statistics; the returned action is not committed yet.

    ``data_change=False`` marks a rewrite of rows the table holds already, which change data feed
    readers skip.
    """
    folder = f"{PARTITION_COLUMN}={date if date is not None else '__HIVE_DEFAULT_PARTITION__'}"
    relative = f"{folder}/part-00000-{uuid.uuid4()}.c000.zstd.parquet"
    target = root / relative
    target.parent.mkdir(parents=True, exist_ok=True)
    # zstd 1: landing files are a third smaller than with snappy for 0.24 µs more CPU per row
    # (bench/results/landing_codec.md), and they are most of what vacuum's retention keeps.
    pq.write_table(part, target, compression="zstd", compression_level=1, row_group_size=1 << 20)
    return AddAction(
        relative,
        target.stat().st_size,
        {PARTITION_COLUMN: date},
        modified_ms,
        data_change,
        file_statistics(part),
    )
