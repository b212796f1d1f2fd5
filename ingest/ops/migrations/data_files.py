"""A Delta table's data files by their path relative to the table, on a local disk or on S3:
opened for ``pyarrow.parquet.ParquetFile``, and removed.

For a job that rewrites a table file by file (table_rewrite.py), whose new files ``write_part``
writes. On S3 a file is read in one GET, as ``log_folder`` reads a checkpoint: the rewrite holds a
whole converted file in memory anyway. A DELETE succeeds for a key that is gone too, as
``unlink(missing_ok=True)`` does.
"""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path

import pyarrow as pa

from ingest.landing.delta.table_location import TableLocation


def open_data_file(root: TableLocation, relative: str) -> Path | pa.BufferReader:
    """A source ``pyarrow.parquet.ParquetFile`` reads: the file's path, or its bytes from S3."""
    if root.is_local:
        return root.local_path / relative
    answer = root.s3.get_object(Bucket=root.bucket, Key=root.key(relative))
    return pa.BufferReader(answer["Body"].read())


def remove_data_files(root: TableLocation, relatives: Iterable[str]) -> None:
    for relative in relatives:
        if root.is_local:
            (root.local_path / relative).unlink(missing_ok=True)
        else:
            root.s3.delete_object(Bucket=root.bucket, Key=root.key(relative))
