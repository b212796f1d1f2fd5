"""What a landing commit depends on: the app transactions it must find where it left them.

A partition's offset is one (``Landing``, the service's own app id); other writers (``ingest dlq
replay``) bring app transactions of their own (``Fence``). A commit that finds one moved is
dropped (``FencedError``): another writer landed it first.
"""

from __future__ import annotations

from dataclasses import dataclass

from ingest.core.errors import IngestError


class FencedError(IngestError):
    """Another writer committed under one of our app transactions since we read it (a partition's
    offset, or a ``Fence``): drop the commit."""


@dataclass(frozen=True)
class Landing:
    """One partition's part of a commit: the offset we resumed from and the new last offset."""

    expected: int | None
    last: int


@dataclass(frozen=True)
class Fence:
    """An app transaction a commit depends on: it must still be at ``expected``; the commit sets ``new``.

    A ``Landing`` is one for the service's own app id; other writers (``ingest dlq replay``) bring
    app ids of their own, so they never fence the service's commits, nor the service theirs.
    """

    app_id: str
    expected: int | None
    new: int
