"""Where a long-running command's log goes, and in which shape: ``configure_logging``.

``--log-format auto`` (the default) writes JSON lines when stderr is not a terminal (a log
shipper must be able to parse every line) and readable text on a terminal. Once JSON lines are
on, the command's last error line and an uncaught exception are JSON lines too.
"""

from __future__ import annotations

import argparse
import logging
import sys
import threading
from types import TracebackType
from typing import Literal, TextIO

from ingest.core.logs.context import BatchIdFilter
from ingest.core.logs.format import JsonFormatter, TextFormatter

LogFormat = Literal["json", "text", "auto"]
LOG_FORMATS: tuple[LogFormat, ...] = ("json", "text", "auto")
CLEAR_LINE = "\r\x1b[K"  # back to the line's start, erase it
_log = logging.getLogger("gamelake.ingest")


class _TerminalHandler(logging.StreamHandler[TextIO]):
    """On a terminal each line first erases the one it starts on: a progress line may be there."""

    def format(self, record: logging.LogRecord) -> str:
        return CLEAR_LINE + super().format(record)


def is_terminal(stream: TextIO) -> bool:
    isatty = getattr(stream, "isatty", None)
    return bool(isatty and isatty())


def configure_logging(level: int | str, fmt: LogFormat = "auto", stream: TextIO | None = None) -> None:
    """Send every record at ``level`` and above to ``stream`` (stderr), each with its batch id."""
    stream = stream if stream is not None else sys.stderr
    terminal = is_terminal(stream)
    handler: logging.StreamHandler[TextIO] = (
        _TerminalHandler(stream) if terminal else logging.StreamHandler(stream)
    )
    json_lines = fmt == "json" or (fmt == "auto" and not terminal)
    handler.setFormatter(JsonFormatter() if json_lines else TextFormatter())
    handler.addFilter(BatchIdFilter())
    logging.basicConfig(level=level, handlers=[handler], force=True)
    if json_lines:
        sys.excepthook = _log_uncaught
        threading.excepthook = _log_uncaught_in_thread


def json_lines_on() -> bool:
    return any(isinstance(h.formatter, JsonFormatter) for h in logging.getLogger().handlers)


def report_failure(line: str, exit_code: int) -> None:
    """A command's last line, ``ingest CMD: error: ...``: a JSON log line once JSON lines are on."""
    if json_lines_on():
        _log.error(line, extra={"exit_code": exit_code})
    else:
        print(line, file=sys.stderr)


def add_log_format_argument(parser: argparse.ArgumentParser) -> None:
    """``--log-format``; unset (None) means auto."""
    parser.add_argument(
        "--log-format",
        choices=LOG_FORMATS,
        help="json: one JSON object per line; text: for people; auto (default): json unless stderr "
        "is a terminal",
    )


def _log_uncaught(kind: type[BaseException], error: BaseException, trace: TracebackType | None) -> None:
    _log.critical("uncaught exception", exc_info=(kind, error, trace))


def _log_uncaught_in_thread(args: threading.ExceptHookArgs) -> None:
    if args.exc_value is not None:
        thread = args.thread.name if args.thread is not None else "?"
        _log.critical("uncaught exception in thread %s", thread, exc_info=args.exc_value)
