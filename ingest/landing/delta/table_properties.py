"""Table properties of the landing tables, apart from the writer so that the upkeep child,
which needs only these and delta-rs, does not load pyarrow, protobuf and Kafka (about 100 MB
of its resident memory)."""

from __future__ import annotations

from deltalake import DeltaTable

TABLE_CONFIGURATION = {"delta.checkpointInterval": "100", "delta.logRetentionDuration": "interval 48 hours"}


def with_properties(table: DeltaTable, properties: dict[str, str]) -> DeltaTable:
    """``table`` with ``properties`` set, in one metadata commit when any differs."""
    current = table.metadata().configuration
    missing = {key: value for key, value in properties.items() if current.get(key) != value}
    if missing:
        table.alter.set_table_properties(missing, raise_if_not_exists=False)
        table.update_incremental()
    return table
