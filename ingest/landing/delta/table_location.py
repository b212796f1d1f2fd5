"""Where a landing table lives: a folder on a local disk, or a prefix on S3.

The writer reads ``_delta_log`` and writes Parquet files itself (``log_state``, ``tables``), and
hands commits to delta-rs or, on a local disk, to ``local_delta_log``. A ``TableLocation`` gives
both what they need: a pyarrow filesystem with the table's root in it, and the URI and storage
options delta-rs opens the table with. The storage options hold credentials, so they never show
in ``repr``.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from functools import cached_property
from pathlib import Path

import pyarrow.fs as pafs
from deltalake import DeltaTable

from ingest.core.settings.object_storage import S3Access, is_object_storage, s3_access


@dataclass(frozen=True)
class TableLocation:
    uri: str
    storage_options: dict[str, str] = field(default_factory=dict, repr=False, compare=False)
    access: S3Access | None = field(default=None, repr=False, compare=False)

    @classmethod
    def of(cls, place: Path | str) -> TableLocation:
        """A local folder, or an ``s3://`` URI reached with the standard AWS settings."""
        text = str(place)
        if not is_object_storage(text):
            return cls(str(Path(text).absolute()))
        access = s3_access(text)
        return cls(_s3_uri(text), access.delta_rs_options(), access)

    @property
    def is_local(self) -> bool:
        return self.access is None

    @property
    def local_path(self) -> Path:
        if not self.is_local:
            raise ValueError(f"{self.uri} is on object storage, not a local folder")
        return Path(self.uri)

    def child(self, name: str) -> TableLocation:
        return TableLocation(f"{self.uri.rstrip('/')}/{name}", self.storage_options, self.access)

    @cached_property
    def filesystem(self) -> pafs.FileSystem:
        if self.access is None:
            return pafs.LocalFileSystem()
        endpoint = self.access.endpoint_url
        return pafs.S3FileSystem(
            access_key=self.access.access_key_id,
            secret_key=self.access.secret_access_key,
            session_token=self.access.session_token,
            region=self.access.region,
            endpoint_override=endpoint.split("://", 1)[1] if endpoint else None,
            scheme=endpoint.split("://", 1)[0] if endpoint else "https",
            allow_bucket_creation=False,
        )

    @property
    def root(self) -> str:
        """The table's root as a path of ``filesystem``: a folder, or ``bucket/prefix``."""
        return self.uri if self.is_local else self.uri.split("://", 1)[1].rstrip("/")

    def delta_table(self, version: int | None = None) -> DeltaTable:
        return DeltaTable(self.uri, version=version, storage_options=self.storage_options or None)

    def is_delta_table(self) -> bool:
        return DeltaTable.is_deltatable(self.uri, storage_options=self.storage_options or None)

    def __str__(self) -> str:
        return self.uri


def _s3_uri(text: str) -> str:
    """``s3a://`` (Hadoop's name) and ``s3://`` name the same objects; delta-rs reads both."""
    return "s3://" + text.split("://", 1)[1].rstrip("/")
