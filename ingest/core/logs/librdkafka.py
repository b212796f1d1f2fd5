"""librdkafka's own log, through Python logging: one logger, sane levels, repeats folded.

librdkafka repeats a failing connection's line every reconnect (several a second), each with
its own timings. The filter lets a message through once per ``window_s`` (numbers aside); the
count of what it held back goes with the next one let through. While ``muted`` (the service's
start-up check, which turns a refusal into one error line of its own) it lets nothing through.
"""

from __future__ import annotations

import logging
import re
import time

LOGGER_NAME = "gamelake.librdkafka"


class RepeatFilter(logging.Filter):
    def __init__(self, window_s: float = 60.0) -> None:
        super().__init__()
        self.window_s = window_s
        self.muted = False
        self._last: dict[str, tuple[float, int]] = {}

    def filter(self, record: logging.LogRecord) -> bool:
        if self.muted:
            return False
        text = record.getMessage()
        key = re.sub(r"\d+", "#", text)
        now = time.monotonic()
        seen = self._last.get(key)
        if seen is not None and now - seen[0] < self.window_s:
            self._last[key] = (seen[0], seen[1] + 1)
            return False
        held_back = seen[1] if seen is not None else 0
        self._last[key] = (now, 0)
        if held_back:
            record.msg, record.args = f"{text} (repeated {held_back} times)", ()
        return True


def repeat_filter() -> RepeatFilter:
    """The filter of librdkafka's logger (one per process)."""
    logger = logging.getLogger(LOGGER_NAME)
    for existing in logger.filters:
        if isinstance(existing, RepeatFilter):
            return existing
    added = RepeatFilter()
    logger.addFilter(added)
    return added


def librdkafka_logger() -> logging.Logger:
    """The logger to hand librdkafka (``"logger"`` in its configuration)."""
    repeat_filter()
    return logging.getLogger(LOGGER_NAME)
