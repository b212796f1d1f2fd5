"""What a landed batch tells operators: metrics, one JSON log line, one event-log row."""

from __future__ import annotations

from collections import Counter

from ingest.core.logs.json_log import log_event
from ingest.core.metrics import prometheus as metrics
from ingest.landing.service.lander import LandedBatch
from ingest.landing.side_tables.event_log import Event, EventLog


def report_commit(landed: LandedBatch, event_log: EventLog) -> None:
    decoded, timings = landed.decoded, landed.timings
    rows = decoded.table.num_rows if decoded.table is not None else 0
    stages = Counter(d.error.stage for d in decoded.dead_letters)
    metrics.ROWS.inc(rows)
    metrics.LAST_COMMIT.set_to_current_time()
    for stage, count in stages.items():
        metrics.DEAD_LETTERS.labels(stage).inc(count)
        metrics.DECODE_ERRORS.labels(stage).inc(count)
    metrics.BATCH_SECONDS.observe(timings.total_ms / 1000)
    metrics.COMMIT_SECONDS.observe(timings.commit_ms / 1000)
    schema_ids = sorted(decoded.schema_ids)
    ranges = sorted(landed.ranges.items())
    log_event(
        "batch",
        batch_id=landed.batch_id,
        bronze_version=landed.bronze_version,
        partitions={str(tp): f"{r.first_offset}-{r.last_offset}" for tp, r in ranges},
        rows=rows,
        dead_letters=dict(stages),
        schema_ids=schema_ids,
        **timings.__dict__,
    )
    event_log.record(
        Event(
            "commit",
            batch_id=landed.batch_id,
            bronze_version=landed.bronze_version,
            partitions=[{"topic": tp.topic, "partition": tp.partition, **r.as_dict()} for tp, r in ranges],
            rows=rows,
            dead_letters=len(decoded.dead_letters),
            schema_ids=schema_ids,
            message="; ".join(sorted({str(d.error) for d in decoded.dead_letters})[:5]) or None,
            **timings.__dict__,
        )
    )
