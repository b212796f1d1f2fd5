"""The end of the JSON-text migration: bronze says it holds native types (bronze_format.py).

It is the migration's last commit, after bronze's rewrite and the readers' marks. A run killed
before it leaves bronze refused by the service (it still lists JSON text); a rerun finds
nothing left to convert and makes this commit.
"""

from __future__ import annotations

from deltalake import DeltaTable

from ingest.landing.delta.bronze_format import JSON_ERA_COLUMNS, TYPED_COLUMNS
from ingest.landing.delta.table_properties import with_properties


def mark_typed(table: DeltaTable) -> bool:
    """Say bronze holds native types, in a property commit unless it says so already; True if so."""
    table.update_incremental()
    if table.metadata().configuration.get(JSON_ERA_COLUMNS) == TYPED_COLUMNS[JSON_ERA_COLUMNS]:
        return False
    with_properties(table, TYPED_COLUMNS)
    return True
