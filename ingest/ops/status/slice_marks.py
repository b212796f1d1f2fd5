"""The readers' marks as the latest bronze slice leaves them, read with delta-rs.

A game with no rows in the slice after its mark is not built by the refresh (its own mark stays
where it was), yet it has read bronze up to the slice's upper bound: status reports that, so a
quiet game does not look like it is falling behind (ingest/ops/refresh_selection.py).
"""

from __future__ import annotations

import json

import pyarrow.compute as pc
from deltalake import DeltaTable

from ingest.landing.delta.table_scan import scan
from ingest.ops.refresh_selection import ANY_GAME, SliceReaders

_COLUMNS = ["game_slug", "bronze_version", "slice_to_version", "slice_reader_marks"]


def carried_marks(slice_table: DeltaTable | None) -> dict[str, int]:
    """reader table -> the bronze version the latest slice carries it to; empty without a slice."""
    if slice_table is None or "slice_reader_marks" not in slice_table.schema().to_arrow().names:
        return {}
    rows = scan(slice_table, _COLUMNS)
    bounds = rows.filter(pc.is_null(rows["bronze_version"]))
    if bounds.num_rows != 1:
        return {}
    marks = {str(k): int(v) for k, v in json.loads(bounds["slice_reader_marks"][0].as_py() or "{}").items()}
    newest = {ANY_GAME: -1}
    landed = rows.filter(pc.is_valid(rows["bronze_version"]))
    for group in landed.group_by("game_slug").aggregate([("bronze_version", "max")]).to_pylist():
        newest[ANY_GAME] = max(newest[ANY_GAME], group["bronze_version_max"])
        if group["game_slug"] is not None:
            newest[group["game_slug"]] = group["bronze_version_max"]
    to_version = int(bounds["slice_to_version"][0].as_py())
    return SliceReaders(marks, newest, [], to_version).carried()
