"""Fixed table properties (the upkeep's retention) set by two writers at once: the one that
loses reads again and is done. Computed ones (field numbers) are not retried this way:
tests/unit/test_ingest_writer.py has the race in which a retry would lose the winner's value."""

from __future__ import annotations

import pyarrow as pa
from deltalake import DeltaTable, write_deltalake

from ingest.landing.delta.table_properties import with_fixed_properties


def test_two_writers_setting_the_same_properties_from_one_version_both_succeed(tmp_path):
    write_deltalake(str(tmp_path), pa.table({"n": [1]}))
    first, second = DeltaTable(str(tmp_path)), DeltaTable(str(tmp_path))  # both at version 0
    wanted = {"delta.logRetentionDuration": "interval 12 hours"}
    with_fixed_properties(first, wanted)
    with_fixed_properties(second, wanted)  # its commit from version 0 is refused: it reads again
    table = DeltaTable(str(tmp_path))
    assert table.metadata().configuration["delta.logRetentionDuration"] == "interval 12 hours"
    assert table.version() == 1, "set once, by the first"
