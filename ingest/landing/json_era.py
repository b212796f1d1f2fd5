"""Which bronze columns still hold JSON text from before native types, kept true across a crash.

``gamelake.json_era_columns`` (a table property) lists them; the migration empties it in a
property commit after its rewrite. A crash between the two would leave converted columns
listed, and a listed column whose native type is text too (a ``StringValue``: '"abc"' then,
'abc' now) would keep landing JSON. So the rewrite's own commit records the columns it
converted (``gamelake.converted_columns`` in its commitInfo), and whoever opens bronze next, the
service or a rerun of the migration, drops them from the list.
"""

from __future__ import annotations

import json

from deltalake import DeltaTable

from ingest.landing.bronze_columns import JSON_ERA_COLUMNS
from ingest.landing.table_properties import with_properties

CONVERTED_KEY = "gamelake.converted_columns"  # in the rewrite's commitInfo, as a JSON list
COMMITS_SEARCHED = 100  # nothing lands between a crashed rewrite and the next open of bronze


def listed(configuration: dict[str, str]) -> list[str]:
    return list(json.loads(configuration.get(JSON_ERA_COLUMNS, "[]")))


def converted_recently(table: DeltaTable) -> set[str]:
    """The columns the recent rewrites converted, by their commitInfo."""
    found: set[str] = set()
    for commit in table.history(COMMITS_SEARCHED):
        if CONVERTED_KEY in commit:
            found.update(json.loads(commit[CONVERTED_KEY]))
    return found


def forget(table: DeltaTable, converted: set[str]) -> bool:
    """Drop ``converted`` from the list, in a property commit when any is listed; True if so."""
    table.update_incremental()
    held = listed(table.metadata().configuration)
    left = sorted(set(held) - converted)
    if left == sorted(held):
        return False
    with_properties(table, {JSON_ERA_COLUMNS: json.dumps(left)})
    return True


def forget_converted_recently(table: DeltaTable) -> bool:
    """After a crash between a rewrite and its property commit: finish the latter."""
    if not listed(table.metadata().configuration):
        return False
    converted = converted_recently(table)
    return bool(converted) and forget(table, converted)
