"""The batch a log record belongs to: set once per batch, stamped on every record logged meanwhile.

A context variable costs one ``set`` per batch and one ``get`` per log record, nothing per Kafka
record. Threads start with an empty context, so a background thread's lines carry no batch id.
"""

from __future__ import annotations

import contextlib
import logging
from collections.abc import Iterator
from contextvars import ContextVar

_BATCH_ID: ContextVar[str | None] = ContextVar("gamelake_batch_id", default=None)


@contextlib.contextmanager
def batch_context(batch_id: str) -> Iterator[None]:
    """While inside, every log record carries ``batch_id``."""
    token = _BATCH_ID.set(batch_id)
    try:
        yield
    finally:
        _BATCH_ID.reset(token)


class BatchIdFilter(logging.Filter):
    """A handler filter that adds the current batch's id to a record that names none itself."""

    def filter(self, record: logging.LogRecord) -> bool:
        batch_id = _BATCH_ID.get()
        if batch_id is not None and not hasattr(record, "batch_id"):
            record.batch_id = batch_id
        return True
