"""How a log record looks: one JSON object per line for machines, one readable line for people.

Both show a record's extra fields (``log.info("...", extra={...})``, ``log_event``'s fields) and
its batch id. A JSON line is never split: a traceback goes into its ``exception`` field.
"""

from __future__ import annotations

import json
import logging
from datetime import UTC, datetime
from typing import Any

_BUILT_IN = frozenset(logging.makeLogRecord({}).__dict__) | {"message", "asctime"}
_JSON_KEYS = ("time", "level", "logger", "message", "exception", "stack")


def extra_fields(record: logging.LogRecord) -> dict[str, Any]:
    """What the caller attached to ``record`` beyond logging's own attributes."""
    return {k: v for k, v in record.__dict__.items() if k not in _BUILT_IN and k not in _JSON_KEYS}


def _utc(created: float) -> str:
    return datetime.fromtimestamp(created, UTC).isoformat(timespec="milliseconds").replace("+00:00", "Z")


def _compact_json(value: Any) -> str:
    return json.dumps(value, default=str, separators=(",", ":"))


class JsonFormatter(logging.Formatter):
    """``{"time": ISO 8601 UTC, "level", "logger", "message", ...extra fields, "exception"?}``."""

    def format(self, record: logging.LogRecord) -> str:
        line = {
            "time": _utc(record.created),
            "level": record.levelname,
            "logger": record.name,
            "message": record.getMessage(),
            **extra_fields(record),
        }
        if record.exc_info:
            line["exception"] = self.formatException(record.exc_info)
        if record.stack_info:
            line["stack"] = self.formatStack(record.stack_info)
        return _compact_json(line)


class TextFormatter(logging.Formatter):
    """``time LEVEL logger message key=value ... [batch id]``, a traceback below it."""

    def __init__(self) -> None:
        super().__init__("%(asctime)s %(levelname)s %(name)s %(message)s")

    def formatMessage(self, record: logging.LogRecord) -> str:
        fields = extra_fields(record)
        fields.pop("event", None)  # log_event's kind is the message already
        batch_id = fields.pop("batch_id", None)
        parts = [super().formatMessage(record)]
        parts += [f"{key}={_readable(value)}" for key, value in fields.items()]
        if batch_id is not None:
            parts.append(f"[batch {batch_id}]")
        return " ".join(parts)


def _readable(value: Any) -> str:
    if isinstance(value, str):
        return value if value and " " not in value else json.dumps(value)
    return _compact_json(value)
