"""A Delta table as status reports it, read with delta-rs (no Spark): path, version, rows, last commit.

A table is a local folder or an ``s3://`` URI (the landing tables under ``warehouse_uri``)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from deltalake import DeltaTable

from ingest.landing.delta.table_location import TableLocation
from ingest.ops.status.time_text import iso_utc


def open_table(place: Path | str) -> DeltaTable | None:
    """The table at ``place``, or None when it has not been created yet."""
    location = TableLocation.of(place)
    return location.delta_table() if location.is_delta_table() else None


def last_commit_s(table: DeltaTable) -> float:
    return float(table.history(1)[0]["timestamp"]) / 1000


def describe(path: Path | str, table: DeltaTable | None) -> dict[str, Any]:
    """``path``, ``exists``, ``version``, ``rows`` (from the file statistics) and ``last_commit_at``."""
    return {
        "path": str(path),
        "exists": table is not None,
        "version": table.version() if table else None,
        "rows": table.count() if table else 0,
        "last_commit_at": iso_utc(last_commit_s(table)) if table else None,
    }
