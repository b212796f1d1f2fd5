"""``/healthz``: healthy while no fatal error is pending and the loop polls within the poll interval."""

from __future__ import annotations

import time
from collections.abc import Iterable

from ingest.landing.records import TopicPartition


def health_report(
    instance_id: str,
    failed: bool,
    last_poll: float,
    max_poll_interval_ms: int,
    partitions: Iterable[TopicPartition],
    commits: int,
) -> dict[str, object]:
    since_poll = time.monotonic() - last_poll
    return {
        "ok": not failed and since_poll * 1000 < max_poll_interval_ms,
        "instance": instance_id,
        "seconds_since_poll": round(since_poll, 2),
        "partitions": sorted(str(tp) for tp in partitions),
        "commits": commits,
    }
