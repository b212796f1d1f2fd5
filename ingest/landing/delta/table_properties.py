"""Table properties of the landing tables, apart from the writer so that the upkeep child,
which needs only these and delta-rs, does not load pyarrow, protobuf and Kafka (about 100 MB
of its resident memory)."""

from __future__ import annotations

from deltalake import DeltaTable
from deltalake.exceptions import CommitFailedError

TABLE_CONFIGURATION = {"delta.checkpointInterval": "100", "delta.logRetentionDuration": "interval 48 hours"}


def with_properties(table: DeltaTable, properties: dict[str, str], attempts: int = 5) -> DeltaTable:
    """``table`` with ``properties`` set, in one metadata commit when any differs.

    Two writers may set them at once (the upkeeps of two instances, the first time): the one
    that loses reads the table again, and sets what is still missing, if anything."""
    for attempt in range(attempts):
        current = table.metadata().configuration
        missing = {key: value for key, value in properties.items() if current.get(key) != value}
        if not missing:
            return table
        try:
            table.alter.set_table_properties(missing, raise_if_not_exists=False)
        except CommitFailedError:
            if attempt == attempts - 1:
                raise
        table.update_incremental()
    return table
