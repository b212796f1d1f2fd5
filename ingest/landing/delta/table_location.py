"""Where a landing table lives: a folder on a local disk, or a prefix on S3.

The writer reads ``_delta_log`` and writes Parquet files itself (``log_state``, ``tables``), and
hands commits to delta-rs or, on a local disk, to ``local_delta_log``. A ``TableLocation`` gives
both what they need: the folder, or on S3 a client with the bucket and key prefix; and the URI
and storage options delta-rs opens the table with. The storage options hold credentials, so they
never show in ``repr``, and are made at each open from the keys botocore holds then: a role's
keys are renewed before they expire, and a table opened later gets the new ones (a handle kept
open gets them through ``KeptTable``).

On S3 the writer's own reads and writes are plain single requests (botocore): one GET or HEAD
per look at the log, one PUT per Parquet file. pyarrow's S3 filesystem would list a "folder"
after each missing key and upload every file in three requests (a multipart upload).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from functools import cached_property
from pathlib import Path
from typing import Any
from urllib.parse import unquote, urlparse

from deltalake import DeltaTable

from ingest.core.settings.object_storage import Keys, S3Access, is_object_storage, s3_access


@dataclass(frozen=True)
class TableLocation:
    uri: str
    access: S3Access | None = field(default=None, repr=False, compare=False)

    @classmethod
    def of(cls, place: Path | str) -> TableLocation:
        """A local folder, or an ``s3://`` URI reached with the standard AWS settings."""
        text = str(place)
        if text.startswith("file:"):  # as Spark qualifies a local path: file:/x or file:///x
            text = unquote(urlparse(text).path)
        if not is_object_storage(text):
            return cls(str(Path(text).absolute()))
        access = s3_access(text)
        return cls(_s3_uri(text), access)

    @property
    def is_local(self) -> bool:
        return self.access is None

    @property
    def storage_options(self) -> dict[str, str]:
        """What delta-rs opens the table with now; empty on a local disk."""
        return self.access.delta_rs_options() if self.access else {}

    def keys(self) -> Keys | None:
        """The S3 keys a table opened now is signed with; None on a local disk."""
        return self.access.keys() if self.access else None

    @property
    def local_path(self) -> Path:
        if not self.is_local:
            raise ValueError(f"{self.uri} is on object storage, not a local folder")
        return Path(self.uri)

    def child(self, name: str) -> TableLocation:
        return TableLocation(f"{self.uri.rstrip('/')}/{name}", self.access)

    @property
    def parent(self) -> TableLocation:
        return TableLocation(self.uri.rstrip("/").rsplit("/", 1)[0], self.access)

    @property
    def name(self) -> str:
        return self.uri.rstrip("/").rsplit("/", 1)[-1]

    def child_folders(self) -> list[str]:
        """The names of the folders (on S3, the key prefixes) directly under this one, sorted."""
        if self.is_local:
            folder = self.local_path
            return sorted(path.name for path in folder.iterdir() if path.is_dir()) if folder.is_dir() else []
        pages = self.s3.get_paginator("list_objects_v2").paginate(
            Bucket=self.bucket, Prefix=self.key(""), Delimiter="/"
        )
        prefixes = [entry["Prefix"] for page in pages for entry in page.get("CommonPrefixes", [])]
        return sorted(prefix.rstrip("/").rsplit("/", 1)[-1] for prefix in prefixes)

    @property
    def bucket(self) -> str:
        return self.uri.split("://", 1)[1].split("/", 1)[0]

    @property
    def key_prefix(self) -> str:
        """The table's root as a key prefix in ``bucket``, without a trailing slash."""
        parts = self.uri.split("://", 1)[1].split("/", 1)
        return parts[1].rstrip("/") if len(parts) > 1 else ""

    def key(self, relative: str) -> str:
        return f"{self.key_prefix}/{relative}" if self.key_prefix else relative

    @cached_property
    def s3(self) -> Any:
        """A botocore S3 client signed with the table's credentials, renewed as they are (object
        storage only)."""
        if self.access is None:
            raise ValueError(f"{self.uri} is a local folder")
        return s3_client(self.access)

    def delta_table(self, version: int | None = None) -> DeltaTable:
        """A delta-rs handle, signing with the keys of now for as long as it lives: one kept across
        batches or cycles is a ``KeptTable``, opened again when they are renewed."""
        return DeltaTable(self.uri, version=version, storage_options=self.storage_options or None)

    def is_delta_table(self) -> bool:
        return DeltaTable.is_deltatable(self.uri, storage_options=self.storage_options or None)

    def __str__(self) -> str:
        return self.uri


def as_location(place: Path | str | TableLocation) -> TableLocation:
    return place if isinstance(place, TableLocation) else TableLocation.of(place)


def s3_client(access: S3Access) -> Any:
    """A botocore S3 client signing with ``access``'s credentials object, which it asks for the
    keys at every request: given explicit keys instead, a client would keep them past expiry."""
    import botocore.session
    from botocore.config import Config
    from botocore.credentials import CredentialResolver

    session = botocore.session.Session()
    session.set_config_variable("profile", None)  # the credentials are given: no profile lookup
    resolver = CredentialResolver([_Resolved(access.botocore_credentials())])
    session.register_component("credential_provider", resolver)
    return session.create_client(
        "s3",
        endpoint_url=access.endpoint_url,
        region_name=access.region,
        config=Config(s3={"addressing_style": "path" if access.endpoint_url else "auto"}),
    )


class _Resolved:
    """A botocore credential provider handing over the credentials already resolved."""

    METHOD = "resolved"

    def __init__(self, credentials: Any) -> None:
        self.credentials = credentials

    def load(self) -> Any:
        return self.credentials


def _s3_uri(text: str) -> str:
    """``s3a://`` (Hadoop's name) and ``s3://`` name the same objects; delta-rs reads both."""
    return "s3://" + text.split("://", 1)[1].rstrip("/")
