"""The ingest's own tables: bronze and how far it trails Kafka, recent dead letters, the event log."""

from __future__ import annotations

from typing import Any

import pyarrow.compute as pc
from deltalake import DeltaTable

from ingest.core.settings.ingest_settings import IngestSettings
from ingest.landing.delta.table_scan import scan
from ingest.ops.status.tables import describe, open_table

HOUR_S = 3_600


def bronze_freshness(partitions: list[dict[str, Any]]) -> float | None:
    """Age of the oldest message Kafka holds that bronze has not; 0 with no lag, None if unknown."""
    if not any(p["lag"] for p in partitions):
        return 0.0
    ages = [p["unlanded_age_s"] for p in partitions if p["lag"] and p["unlanded_age_s"] is not None]
    return max(ages) if ages else None


def dead_letters_last_hour(table: DeltaTable | None, now: float) -> dict[str, int]:
    """Dead letters per stage written in the hour before ``now``."""
    if table is None:
        return {}
    since_us = int((now - HOUR_S) * 1_000_000)
    recent = scan(table, ["stage"], where=f'"dead_lettered_at" >= to_timestamp_micros({since_us})')
    return {c["values"]: c["counts"] for c in pc.value_counts(recent.column("stage")).to_pylist()}


def landing_tables(
    settings: IngestSettings, bronze: DeltaTable | None, partitions: list[dict[str, Any]], now: float
) -> dict[str, dict[str, Any]]:
    """bronze (with its freshness behind Kafka), dead_letters (with the last hour by stage), event_log."""
    bronze_lag = bronze_freshness(partitions)
    dead_letters = open_table(settings.landing_table("dead_letters"))
    event_log = settings.landing_table("ingest_event_log")
    return {
        "bronze": {
            **describe(settings.landing_table("game_events"), bronze),
            "freshness_s": None if bronze_lag is None else round(bronze_lag, 1),
            "freshness_exact": bronze_lag is not None,
        },
        "dead_letters": {
            **describe(settings.landing_table("dead_letters"), dead_letters),
            "last_hour_by_stage": dead_letters_last_hour(dead_letters, now),
        },
        "event_log": describe(event_log, open_table(event_log)),
    }
