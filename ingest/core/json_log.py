"""Structured log lines: one JSON object per line, under the ``gamelake.ingest`` logger."""

from __future__ import annotations

import json
import logging
from typing import Any

log = logging.getLogger("gamelake.ingest")


def log_event(kind: str, level: int = logging.INFO, **fields: Any) -> None:
    log.log(level, json.dumps({"event": kind, **fields}, default=str, separators=(",", ":")))
