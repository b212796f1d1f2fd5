"""A Delta table as status reports it, read with delta-rs (no Spark): path, version, rows, last commit."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from deltalake import DeltaTable

from ingest.ops.status.time_text import iso_utc


def open_table(path: Path) -> DeltaTable | None:
    """The table at ``path``, or None when it has not been created yet."""
    return DeltaTable(str(path)) if DeltaTable.is_deltatable(str(path)) else None


def last_commit_s(table: DeltaTable) -> float:
    return float(table.history(1)[0]["timestamp"]) / 1000


def describe(path: Path, table: DeltaTable | None) -> dict[str, Any]:
    """``path``, ``exists``, ``version``, ``rows`` (from the file statistics) and ``last_commit_at``."""
    return {
        "path": str(path),
        "exists": table is not None,
        "version": table.version() if table else None,
        "rows": table.count() if table else 0,
        "last_commit_at": iso_utc(last_commit_s(table)) if table else None,
    }
