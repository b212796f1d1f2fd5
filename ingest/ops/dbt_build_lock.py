"""dbt's build lock (macros/medallion/build_lock.sql), held from Python: by a job that rewrites
silver, so that no ``dbt run`` or ``dbt build`` writes silver or gold meanwhile, and by the
continuous refresh across the dbt invocations of a cycle.

The lock is the row ``name = 'build'`` of the Delta table ``silver.gamelake_build_lock``; a build
takes it with a MERGE that inserts the row when absent, and Delta's optimistic concurrency lets
one of two racing takers commit. Python takes it the same way through delta-rs, which costs
milliseconds where dbt's on-run-start and on-run-end statements cost seconds a cycle
(bench/results/build_lock.md). dbt takes over a lock older than its
``gamelake_build_lock_minutes`` (a crashed build); a holder given ``stale_after`` does the same.

On S3 the lock holds across hosts: both engines create a Delta version with a conditional put
(delta-rs' ``conditional_put``, Spark's ConditionalPutLogStore), so of two takers on any hosts
exactly one commits.
"""

from __future__ import annotations

import contextlib
import datetime as dt
import uuid
from collections.abc import Iterator
from pathlib import Path

import pyarrow as pa
from deltalake import DeltaTable
from deltalake.exceptions import CommitFailedError, TableNotFoundError

from ingest.core.errors import IngestError
from ingest.landing.delta.kept_table import KeptTable
from ingest.landing.delta.table_location import TableLocation, as_location
from ingest.landing.delta.table_scan import scan
from ingest.ops.lakehouse_checkpoints import checkpoint

LOCK_TABLE = Path("silver.db") / "gamelake_build_lock"
LOCK_NAME = "silver.gamelake_build_lock"
# the table as dbt's hook makes it (macros/medallion/build_lock.sql, _gamelake_lock_ddl)
LOCK_DDL = (
    f"create table if not exists {LOCK_NAME} (name string, holder string, taken_at timestamp) using delta"
)
LOCK_HELD_VAR = "gamelake_build_lock_held_by"  # tells dbt's hooks the caller holds the lock
# Each holding adds two commits, and an open replays the commits after the last checkpoint (on
# S3, a GET each): a checkpoint every 10th keeps an open to a few reads, where delta-rs' default
# (every 100th) left it about 50 (bench/results/object_storage.md).
CHECKPOINT_COMMITS = 10
RELEASE = "`dbt run-operation gamelake_release_build_lock --args '{force: true}'`"


class BuildLockHeld(IngestError):
    """Another build or job holds the lock; the message names it and how to release it."""


def new_holder(job: str) -> str:
    """A holder name unique to one holding: ``<job>-<uuid>``."""
    return f"{job}-{uuid.uuid4()}"


@contextlib.contextmanager
def holding_build_lock(
    tables_dir: Path | TableLocation,
    job: str,
    holder: str | None = None,
    stale_after: dt.timedelta | None = None,
) -> Iterator[bool]:
    """Hold the lock as ``holder`` (a new one of ``job``'s by default); refuses, naming the holder,
    while another holds it. A lock older than ``stale_after`` is taken over. A project no build
    has run in has no lock table, and nothing of dbt's to protect yet: yields whether the lock is
    held. The lock's table is opened once for the holding (on S3, one read of its log), and again
    only if the S3 keys were renewed while a long build held it."""
    kept = _opened(lock_table(tables_dir))
    if kept is None:
        yield False
        return
    holder = holder or new_holder(job)
    opened_at = kept.table.version()
    _take(kept.table, holder, job, stale_after)
    try:
        yield True
    finally:
        table = kept.table
        table.update_incremental()  # the commits since the take, read onto the one handle
        table.delete(f"holder = '{holder}'")
        if table.version() // CHECKPOINT_COMMITS > opened_at // CHECKPOINT_COMMITS:
            checkpoint(LOCK_NAME, table, lock_table(tables_dir))


def _opened(lock: TableLocation) -> KeptTable | None:
    try:
        return KeptTable(lock)
    except TableNotFoundError:
        return None


def lock_table(tables_dir: Path | TableLocation) -> TableLocation:
    """The lock's table under dbt's tables (a folder, or a prefix on S3)."""
    return as_location(tables_dir).child(LOCK_TABLE.as_posix())


def _take(table: DeltaTable, holder: str, job: str, stale_after: dt.timedelta | None) -> None:
    now = dt.datetime.now(dt.UTC)
    schema = pa.schema(table.schema().to_arrow())
    wanted = pa.table({"name": ["build"], "holder": [holder], "taken_at": [now]}).cast(schema)
    # a held row older than this is a crashed holder's, taken over; without stale_after, none is
    stale_before = now - stale_after if stale_after else dt.datetime(1, 1, 2, tzinfo=dt.UTC)
    wanted = wanted.append_column("stale_before", pa.array([stale_before], schema.field("taken_at").type))
    columns = {name: f"wanted.{name}" for name in ("name", "holder", "taken_at")}
    with contextlib.suppress(CommitFailedError):  # another took it meanwhile: found below
        merging = table.merge(wanted, "held.name = wanted.name", source_alias="wanted", target_alias="held")
        merging = merging.when_matched_update(columns, predicate="held.taken_at < wanted.stale_before")
        merging.when_not_matched_insert(columns).execute()
    table.update_incremental()
    held = scan(table, where="\"name\" = 'build'").to_pylist()
    if not held or held[0]["holder"] != holder:
        raise BuildLockHeld(_held_by_another(held[0] if held else None, job))


def _held_by_another(held: dict | None, job: str) -> str:
    if held is None:
        return f"the build lock is held by an unknown holder; nothing was changed. Release it with {RELEASE}"
    since = f"since {held['taken_at']:%Y-%m-%d %H:%M:%S} UTC"
    if str(held["holder"]).startswith(f"{job}-"):
        # Its ``finally`` did not run (SIGKILL, out of memory): only an operator knows it is dead.
        return (
            f"another run of {job} ({held['holder']}, {since}) holds the build lock; nothing was "
            f"changed. If that run was killed, release its lock with {RELEASE}, then run this again"
        )
    other_job = _job_of(str(held["holder"]))
    if other_job is not None:
        return (
            f"{other_job} ({held['holder']}, {since}) holds the build lock: wait for it to end, then run "
            f"this again; nothing was changed. If it was killed, release its lock with {RELEASE}"
        )
    return (
        f"a dbt build (invocation {held['holder']}, {since}) is writing silver and gold: wait for it "
        f"to end, then run this again; nothing was changed. If that build crashed, release its lock "
        f"with {RELEASE}"
    )


def _job_of(holder: str) -> str | None:
    """The job of a holder named by ``new_holder`` (``<job>-<uuid>``); None for a dbt invocation's
    id, a bare uuid."""
    job, dash, tail = holder[:-37], holder[-37:-36], holder[-36:]
    try:
        uuid.UUID(tail)
    except ValueError:
        return None
    return job if job and dash == "-" else None
