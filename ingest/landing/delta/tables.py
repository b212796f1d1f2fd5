"""The landing tables on a local disk or on S3: a table opened or created with its properties,
and a Parquet file written for a commit that does not exist yet."""

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
from ingest.landing.delta.table_location import TableLocation, as_location
from ingest.landing.delta.table_properties import TABLE_CONFIGURATION, with_properties


def ensure_table(
    place: Path | TableLocation,
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
    location = as_location(place)
    usable_folder(location, name)
    try:
        if location.is_delta_table():
            return with_properties(location.delta_table(), configuration or {})
        return DeltaTable.create(
            location.uri,
            schema,
            mode="ignore",
            partition_by=partition_by,
            name=name,
            configuration=wanted,
            storage_options=location.storage_options or None,
        )
    except (DeltaError, OSError) as err:
        raise ConfigError(f"cannot open or create the {name} Delta table at {location}: {err}") from None


def usable_folder(place: Path | TableLocation, name: str) -> None:
    """ConfigError unless a local table's folder is (or can be made) one this user writes.

    On object storage a missing bucket or a refused key shows at the first request instead."""
    location = as_location(place)
    if not location.is_local:
        return
    path = location.local_path
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
    root: Path | TableLocation, date: str | None, part: pa.Table, modified_ms: int, data_change: bool = True
) -> AddAction:
    """Write ``part`` (rows of one ``event_date``, without that column) as one parquet file of the
    table at ``root``, with its statistics; the returned action is not committed yet.

    ``data_change=False`` marks a rewrite of rows the table holds already, which change data feed
    readers skip.
    """
    folder = f"{PARTITION_COLUMN}={date if date is not None else '__HIVE_DEFAULT_PARTITION__'}"
    relative = f"{folder}/part-00000-{uuid.uuid4()}.c000.zstd.parquet"
    size = _write_parquet(as_location(root), relative, part)
    return AddAction(
        relative,
        size,
        {PARTITION_COLUMN: date},
        modified_ms,
        data_change,
        file_statistics(part),
    )


def _write_parquet(root: TableLocation, relative: str, part: pa.Table) -> int:
    """Write ``part`` as the file ``relative`` of the table; returns its size in bytes.

    zstd 1: landing files are a third smaller than with snappy for 0.24 µs more CPU per row
    (bench/results/landing_codec.md), and they are most of what vacuum's retention keeps. On
    object storage the file is built in memory and sent in one PUT, which also tells its size.
    """
    options = {"compression": "zstd", "compression_level": 1, "row_group_size": 1 << 20}
    if root.is_local:
        target = root.local_path / relative
        target.parent.mkdir(parents=True, exist_ok=True)
        pq.write_table(part, target, **options)
        return target.stat().st_size
    buffer = pa.BufferOutputStream()
    pq.write_table(part, buffer, **options)
    data = buffer.getvalue()
    root.s3.put_object(Bucket=root.bucket, Key=root.key(relative), Body=data.to_pybytes())
    return data.size
