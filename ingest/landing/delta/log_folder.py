"""A table's ``_delta_log`` as ``LogState`` reads it: on a local disk, or on object storage.

Local reads stay plain ``pathlib`` calls (a ``stat`` per batch is what the writer's cost was
measured with). On S3 each call is one request: a GET of the next commit, which answers 404 when
nobody committed, and a HEAD of ``_last_checkpoint``, whose ETag tells whether it changed.
"""

from __future__ import annotations

import fnmatch
from pathlib import Path
from typing import TYPE_CHECKING, Protocol

from ingest.landing.delta.table_location import TableLocation

if TYPE_CHECKING:  # the upkeep child reads the log without loading pyarrow
    import pyarrow as pa


DELETE_BATCH = 1000  # the most keys one S3 DeleteObjects request takes


class LogFolder(Protocol):
    def __str__(self) -> str: ...

    def read_text(self, name: str) -> str | None:
        """The file's text, or None when it does not exist."""

    def identity(self, name: str) -> tuple[object, ...] | None:
        """What changes when the file is rewritten, or None when it does not exist."""

    def exists(self, name: str) -> bool: ...

    def open(self, name: str) -> pa.BufferReader | Path:
        """A source ``pyarrow.parquet.ParquetFile`` reads."""

    def matching(self, pattern: str) -> list[str]:
        """The sorted names of the folder's files that match a glob pattern."""

    def remove(self, names: list[str]) -> None:
        """Delete these files of the folder; one already gone is no error."""


class LocalLogFolder:
    def __init__(self, folder: Path) -> None:
        self.folder = folder

    def __str__(self) -> str:
        return str(self.folder)

    def read_text(self, name: str) -> str | None:
        try:
            return (self.folder / name).read_text()
        except FileNotFoundError:
            return None

    def identity(self, name: str) -> tuple[object, ...] | None:
        try:
            stat = (self.folder / name).stat()
        except FileNotFoundError:
            return None
        return (stat.st_ino, stat.st_size, stat.st_mtime_ns)

    def exists(self, name: str) -> bool:
        return (self.folder / name).exists()

    def open(self, name: str) -> Path:
        return self.folder / name

    def matching(self, pattern: str) -> list[str]:
        return sorted(path.name for path in self.folder.glob(pattern))

    def remove(self, names: list[str]) -> None:
        for name in names:
            (self.folder / name).unlink(missing_ok=True)


class ObjectLogFolder:
    """``_delta_log`` on S3, one request per call: a GET, a HEAD, or a listing for a glob."""

    def __init__(self, table: TableLocation) -> None:
        self.table = table
        self.prefix = table.key("_delta_log")

    def __str__(self) -> str:
        return f"{self.table.uri}/_delta_log"

    def read_text(self, name: str) -> str | None:
        body = self._get(name)
        return None if body is None else body.decode()

    def identity(self, name: str) -> tuple[object, ...] | None:
        try:
            head = self.table.s3.head_object(Bucket=self.table.bucket, Key=f"{self.prefix}/{name}")
        except self.table.s3.exceptions.ClientError as err:
            if _missing(err):
                return None
            raise
        return (head["ETag"], head["ContentLength"])

    def exists(self, name: str) -> bool:
        return self.identity(name) is not None

    def open(self, name: str) -> pa.BufferReader:
        import pyarrow as pa

        body = self._get(name)
        if body is None:
            raise FileNotFoundError(f"{self}/{name}")
        return pa.BufferReader(body)

    def matching(self, pattern: str) -> list[str]:
        head = pattern.split("*", 1)[0]
        pages = self.table.s3.get_paginator("list_objects_v2").paginate(
            Bucket=self.table.bucket, Prefix=f"{self.prefix}/{head}"
        )
        names = (item["Key"].rsplit("/", 1)[1] for page in pages for item in page.get("Contents", []))
        return sorted(name for name in names if fnmatch.fnmatchcase(name, pattern))

    def remove(self, names: list[str]) -> None:
        for start in range(0, len(names), DELETE_BATCH):
            keys = [{"Key": f"{self.prefix}/{name}"} for name in names[start : start + DELETE_BATCH]]
            self.table.s3.delete_objects(Bucket=self.table.bucket, Delete={"Objects": keys, "Quiet": True})

    def _get(self, name: str) -> bytes | None:
        try:
            answer = self.table.s3.get_object(Bucket=self.table.bucket, Key=f"{self.prefix}/{name}")
        except self.table.s3.exceptions.NoSuchKey:
            return None
        return bytes(answer["Body"].read())


def _missing(err: Exception) -> bool:
    status = getattr(err, "response", {}).get("ResponseMetadata", {}).get("HTTPStatusCode")
    return status == 404


def log_folder(table: Path | TableLocation) -> LogFolder:
    if isinstance(table, Path):
        return LocalLogFolder(table / "_delta_log")
    if table.is_local:
        return LocalLogFolder(table.local_path / "_delta_log")
    return ObjectLogFolder(table)
