"""dbt's build lock (macros/medallion/build_lock.sql), held from Python by a job that rewrites
silver, so that no ``dbt run`` or ``dbt build`` writes silver or gold meanwhile.

The lock is the row ``name = 'build'`` of the Delta table ``silver.gamelake_build_lock``; a build
takes it with a MERGE that inserts the row when absent, and Delta's optimistic concurrency lets
one of two racing takers commit. The job takes it the same way through delta-rs. dbt takes over a
lock older than its ``gamelake_build_lock_minutes`` (a crashed build), so a job longer than that
is protected only for that long.
"""

from __future__ import annotations

import contextlib
import datetime as dt
import uuid
from collections.abc import Iterator
from pathlib import Path

import pyarrow as pa
from deltalake import DeltaTable
from deltalake.exceptions import CommitFailedError

from ingest.ops.migrations.json_text_plan import MigrationError

LOCK_TABLE = Path("silver.db") / "gamelake_build_lock"


@contextlib.contextmanager
def holding_build_lock(tables_dir: Path, job: str) -> Iterator[None]:
    """Hold the lock for ``job``; refuses, naming the holder, while a dbt build holds it. A
    project no build has run in has no lock table, and nothing of dbt's to protect yet."""
    path = tables_dir / LOCK_TABLE
    if not DeltaTable.is_deltatable(str(path)):
        yield
        return
    holder = f"{job}-{uuid.uuid4()}"
    _take(DeltaTable(str(path)), holder, job)
    try:
        yield
    finally:
        DeltaTable(str(path)).delete(f"holder = '{holder}'")


def _take(table: DeltaTable, holder: str, job: str) -> None:
    schema = pa.schema(table.schema().to_arrow())
    wanted = pa.table({"name": ["build"], "holder": [holder], "taken_at": [dt.datetime.now(dt.UTC)]}).cast(
        schema
    )
    with contextlib.suppress(CommitFailedError):  # a build took it meanwhile: found below
        merging = table.merge(wanted, "held.name = wanted.name", source_alias="wanted", target_alias="held")
        merging.when_not_matched_insert_all().execute()
    table.update_incremental()
    held = table.to_pyarrow_table(filters=[("name", "=", "build")]).to_pylist()
    if not held or held[0]["holder"] != holder:
        raise MigrationError(_held_by_another(held[0] if held else None, job))


def _held_by_another(held: dict | None, job: str) -> str:
    release = "`dbt run-operation gamelake_release_build_lock --args '{force: true}'`"
    if held is None:
        return f"the build lock is held by an unknown holder; nothing was changed. Release it with {release}"
    since = f"since {held['taken_at']:%Y-%m-%d %H:%M:%S} UTC"
    if str(held["holder"]).startswith(f"{job}-"):
        # Its ``finally`` did not run (SIGKILL, out of memory): only an operator knows it is dead.
        return (
            f"another run of {job} ({held['holder']}, {since}) holds the build lock; nothing was "
            f"changed. If that run was killed, release its lock with {release}, then run this again"
        )
    return (
        f"a dbt build (invocation {held['holder']}, {since}) is writing silver and gold: wait for it "
        f"to end, then run this again; nothing was changed. If that build crashed, release its lock "
        f"with {release}"
    )
