"""A table's ``_delta_log`` as ``LogState`` reads it: on a local disk, or on object storage.

Local reads stay plain ``pathlib`` calls (a ``stat`` per batch is what the writer's cost was
measured with). On S3 each call is one request: a GET of the next commit, which answers 404 when
nobody committed, and a HEAD of ``_last_checkpoint``.
"""

from __future__ import annotations

import fnmatch
from pathlib import Path
from typing import Protocol

import pyarrow as pa
import pyarrow.fs as pafs

from ingest.landing.delta.table_location import TableLocation


class LogFolder(Protocol):
    def __str__(self) -> str: ...

    def read_text(self, name: str) -> str | None:
        """The file's text, or None when it does not exist."""

    def identity(self, name: str) -> tuple[int, ...] | None:
        """What changes when the file is rewritten (size, mtime), or None when it does not exist."""

    def exists(self, name: str) -> bool: ...

    def open(self, name: str) -> pa.NativeFile | Path:
        """A source ``pyarrow.parquet.ParquetFile`` reads."""

    def matching(self, pattern: str) -> list[str]:
        """The sorted names of the folder's files that match a glob pattern."""


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

    def identity(self, name: str) -> tuple[int, ...] | None:
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


class ObjectLogFolder:
    def __init__(self, filesystem: pafs.FileSystem, folder: str, uri: str) -> None:
        self.filesystem = filesystem
        self.folder = folder
        self.uri = uri

    def __str__(self) -> str:
        return self.uri

    def read_text(self, name: str) -> str | None:
        try:
            with self.filesystem.open_input_stream(f"{self.folder}/{name}") as stream:
                return bytes(stream.read()).decode()
        except FileNotFoundError:
            return None

    def identity(self, name: str) -> tuple[int, ...] | None:
        info = self.filesystem.get_file_info(f"{self.folder}/{name}")
        if info.type == pafs.FileType.NotFound:
            return None
        return (info.size or 0, info.mtime_ns or 0)

    def exists(self, name: str) -> bool:
        return self.identity(name) is not None

    def open(self, name: str) -> pa.NativeFile:
        return self.filesystem.open_input_file(f"{self.folder}/{name}")

    def matching(self, pattern: str) -> list[str]:
        selector = pafs.FileSelector(self.folder, allow_not_found=True)
        names = (info.base_name for info in self.filesystem.get_file_info(selector))
        return sorted(name for name in names if fnmatch.fnmatchcase(name, pattern))


def log_folder(table: Path | TableLocation) -> LogFolder:
    if isinstance(table, Path):
        return LocalLogFolder(table / "_delta_log")
    if table.is_local:
        return LocalLogFolder(table.local_path / "_delta_log")
    return ObjectLogFolder(table.filesystem, f"{table.root}/_delta_log", f"{table.uri}/_delta_log")
