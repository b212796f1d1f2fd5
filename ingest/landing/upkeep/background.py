"""The service's upkeep, run in a child process every so many commits, off the hot path."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path


class BackgroundUpkeep:
    """Upkeep of the landing tables every ``every`` commits of this instance (0: never), in a child.

    Off the hot path: the poll loop keeps landing while the child compacts, checkpoints, cleans
    the log and vacuums (ingest/landing/upkeep/table_upkeep.py), and the child's memory is its own, so the
    service's RSS does not spike. Safe beside landing: compaction commits move no offsets (an
    append racing one re-checks and retries), and the lock keeps it to one compaction per table.
    A child killed mid-way leaves only uncommitted files, which a later vacuum removes.
    """

    def __init__(self, paths: list[Path | str], every: int, log_hours: int, vacuum_hours: int) -> None:
        self.command = [
            sys.executable,
            "-m",
            "ingest.landing.upkeep.table_upkeep",
            str(log_hours),
            str(vacuum_hours),
            *map(str, paths),
        ]
        self.every = every
        self.running: subprocess.Popen[str] | None = None

    def after_commit(self, commits: int) -> dict[str, object] | None:
        """Start the upkeep when due and none runs; the result of one that finished, if any."""
        finished = self.reap()
        if self.every and commits % self.every == 0 and self.running is None:
            self.running = subprocess.Popen(self.command, stdout=subprocess.PIPE, text=True)
        return finished

    def reap(self, wait_s: float = 0.0) -> dict[str, object] | None:
        """The result of the running upkeep once it has ended (waiting up to ``wait_s``)."""
        if self.running is None:
            return None
        try:
            self.running.wait(timeout=wait_s) if wait_s else self.running.poll()
        except subprocess.TimeoutExpired:
            return None
        if self.running.returncode is None:
            return None
        out, _ = self.running.communicate()
        code, self.running = self.running.returncode, None
        try:
            return dict(json.loads(out.strip().splitlines()[-1]))
        except (ValueError, IndexError):
            return {"failed": f"upkeep process exited {code}"}
