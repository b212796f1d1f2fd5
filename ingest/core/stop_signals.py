"""A clean stop on SIGTERM and SIGINT alike, also for a process started in the background.

A non-interactive shell starts background jobs with SIGINT ignored, and Python's default
SIGTERM ends the process at once: without handlers of its own, a backgrounded producer could
be neither interrupted nor stopped cleanly. Installing both handlers replaces whatever the
process inherited.
"""

from __future__ import annotations

import contextlib
import signal
import threading
from collections.abc import Iterable, Iterator
from types import FrameType
from typing import TypeVar

T = TypeVar("T")
SIGNALS = (signal.SIGTERM, signal.SIGINT)


class StopRequest(threading.Event):
    """Set by the first SIGTERM or SIGINT; ``reason`` names the signal."""

    reason = ""

    def request(self, signum: int, _frame: FrameType | None) -> None:
        self.reason = signal.Signals(signum).name
        self.set()


@contextlib.contextmanager
def stop_on_signals() -> Iterator[StopRequest]:
    """While inside, SIGTERM and SIGINT set the yielded event instead of ending the process."""
    stop = StopRequest()
    previous = {sig: signal.signal(sig, stop.request) for sig in SIGNALS}
    try:
        yield stop
    finally:
        for sig, handler in previous.items():
            signal.signal(sig, handler)


def until_set(items: Iterable[T], stop: threading.Event) -> Iterator[T]:
    """``items`` until ``stop`` is set."""
    for item in items:
        if stop.is_set():
            return
        yield item
