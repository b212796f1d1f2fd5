"""Table properties of the landing tables, apart from the writer so that the upkeep child,
which needs only these and delta-rs, does not load pyarrow, protobuf and Kafka (about 100 MB
of its resident memory)."""

from __future__ import annotations

from deltalake import DeltaTable
from deltalake.exceptions import CommitFailedError

TABLE_CONFIGURATION = {"delta.checkpointInterval": "100", "delta.logRetentionDuration": "interval 48 hours"}


def with_properties(table: DeltaTable, properties: dict[str, str]) -> DeltaTable:
    """``table`` with ``properties`` set, in one metadata commit when any differs."""
    current = table.metadata().configuration
    missing = {key: value for key, value in properties.items() if current.get(key) != value}
    if missing:
        table.alter.set_table_properties(missing, raise_if_not_exists=False)
        table.update_incremental()
    return table


def with_fixed_properties(table: DeltaTable, properties: dict[str, str], attempts: int = 5) -> DeltaTable:
    """``with_properties`` for values that do not depend on the table (the upkeep's retention),
    which two writers may set at once: the one that loses reads the table again and sets what
    is still missing. Never for values computed from what the table holds (bronze's field
    numbers): a retry would write the stale value over the winner's."""
    for attempt in range(attempts):
        try:
            return with_properties(table, properties)
        except CommitFailedError:
            if attempt == attempts - 1:
                raise
            table.update_incremental()
    return table
