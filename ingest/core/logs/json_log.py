"""Structured events under the ``gamelake.ingest`` logger: a kind plus fields, one line each.

The kind is the message and the ``event`` field; the fields travel as the record's extras, so
a JSON line holds them as top-level keys and a text line as ``key=value``.
"""

from __future__ import annotations

import logging
from typing import Any

log = logging.getLogger("gamelake.ingest")


def log_event(kind: str, level: int = logging.INFO, **fields: Any) -> None:
    log.log(level, kind, extra={"event": kind, **fields})
