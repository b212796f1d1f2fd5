"""Bronze's compaction lock, kept through a migration that may outlast its lease.

The migration holds bronze's compaction lock (ingest/landing/upkeep/compaction.py) so that no
OPTIMIZE rewrites bronze's old files meanwhile: delta-rs 1.6.6 does not see such a commit conflict
with the migration's overwrite, and would bring the old files back. On S3 the lock is a lease that
lapses ``lease.DEFAULT_TTL_S`` after it was last renewed, and converting a large bronze takes
longer: so it is renewed as rows are converted, and once more before the first commit. On a local
disk it is a ``flock``, held until let go, and renewing it does nothing.
"""

from __future__ import annotations

import time
from collections.abc import Callable

from ingest.landing.upkeep.compaction import Held
from ingest.landing.upkeep.lease import DEFAULT_TTL_S
from ingest.ops.migrations.json_text_plan import MigrationError
from ingest.ops.migrations.table_rewrite import Progress

RENEW_EVERY_S = DEFAULT_TTL_S / 5  # renewals a few seconds late still land well inside the lease


class KeptLock:
    def __init__(self, held: Held, clock: Callable[[], float] = time.monotonic) -> None:
        self.held, self.clock = held, clock
        self.renewed_at = clock()

    def renew(self) -> None:
        """Renew it now; MigrationError when it lapsed and another holder took it."""
        if not self.held.still_held():
            raise MigrationError(
                "bronze's compaction lock lapsed and another holder took it (is an ingest instance or "
                "`make compact` running?): stop them, then run this again; nothing was changed"
            )
        self.renewed_at = self.clock()

    def reporting(self, progress: Progress | None) -> Progress:
        """``progress``, with the lock renewed on the way whenever a renewal is due."""

        def report(done: int, total: int) -> None:
            if self.clock() - self.renewed_at >= RENEW_EVERY_S:
                self.renew()
            if progress is not None:
                progress(done, total)

        return report
