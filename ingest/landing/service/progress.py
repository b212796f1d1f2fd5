"""``ingest run --until-caught-up`` on a terminal: one line, rewritten each second, with an ETA.

Nothing is written when stderr is not a terminal (CI, a log file): there the batch log lines
say the same. Log lines on a terminal erase this line before they print (see log_setup), and it
comes back with the next update.
"""

from __future__ import annotations

import time
from typing import TextIO

from ingest.core.logs.setup import CLEAR_LINE, is_terminal


def progress_line(landed: int, remaining: int, elapsed_s: float) -> str:
    """``12,000 landed, 36,000 to go (25%), 4,000/s, ETA 9s``; ETA ``?`` until something landed."""
    rate = landed / elapsed_s if elapsed_s > 0 else 0.0
    total = landed + remaining
    percent = 100 * landed // total if total else 100
    eta = duration(remaining / rate) if rate > 0 else ("0s" if remaining == 0 else "?")
    return f"{landed:,} landed, {remaining:,} to go ({percent}%), {rate:,.0f}/s, ETA {eta}"


def duration(seconds: float) -> str:
    """``42s``, ``3m05s``, ``2h07m``: coarse enough to read at a glance."""
    whole = round(seconds)
    if whole < 60:
        return f"{whole}s"
    if whole < 3600:
        return f"{whole // 60}m{whole % 60:02d}s"
    return f"{whole // 3600}h{whole // 60 % 60:02d}m"


class CatchUpProgress:
    """Counts the records landed and shows them against the lag, on a terminal only."""

    def __init__(self, stream: TextIO | None) -> None:
        self.stream = stream if stream is not None and is_terminal(stream) else None
        self.started = time.monotonic()
        self.landed = 0
        self.remaining: int | None = None  # unknown until the lag was first measured

    def count(self, records: int) -> None:
        self.landed += records

    def show(self, remaining: int) -> None:
        self.remaining = remaining
        self._draw("")

    def finish(self) -> None:
        """Draw the line a last time and move below it, where what follows can start."""
        self._draw("\n")

    def _draw(self, end: str) -> None:
        if self.stream is None or self.remaining is None:
            return
        line = progress_line(self.landed, self.remaining, time.monotonic() - self.started)
        self.stream.write(CLEAR_LINE + line + end)
        self.stream.flush()
