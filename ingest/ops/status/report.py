"""The status report: one JSON-able dict across Kafka, bronze, silver and gold, with its anomalies.

Its shape is stable (monitors and tests read it); times are UTC ISO 8601 strings (``*_at``),
durations are seconds (``*_s``), a table not created yet has ``exists`` false:

* ``checked_at``, ``level`` (healthy | warning | critical), ``exit_code`` (0 | 1 | 2),
  ``consumer_group``, ``dbt_tables_dir`` (where silver.db and gold.db are)
* ``partitions``: per topic partition ``topic``, ``partition``, ``landed_offset``, ``earliest``,
  ``high_watermark``, ``next_offset``, ``lag``, ``expired_gap``, ``ahead_of_end``,
  ``oldest_unlanded_at``, ``unlanded_age_s``
* ``kafka``: ``lag`` (all partitions), ``oldest_unlanded_at``
* ``schema_ids``: the schema ids seen in bronze
* ``tables``: ``bronze``, ``dead_letters``, ``event_log``, each ``path``, ``exists``, ``version``,
  ``rows``, ``last_commit_at``; bronze adds ``freshness_s`` (behind Kafka) and
  ``freshness_exact``, dead_letters adds ``last_hour_by_stage``
* ``silver``: per game slug, those table keys plus ``active``, ``bronze_version`` (its mark),
  ``freshness_s``, ``freshness_exact``, ``quarantine_rows``, ``quarantine_ratio``
* ``quarantine``: silver_quarantine's table keys, ``bronze_version``, ``freshness_s``,
  ``freshness_exact``, ``by_game``
* ``gold``: per game slug ``active``, ``exists``, ``silver_version`` (its mark), ``freshness_s``,
  ``freshness_exact``, ``last_commit_at``, and ``player_agg`` and ``daily_active`` (table keys)
* ``registry``: ``url``, ``reachable``, ``error``
* ``thresholds``: the ``status_*`` settings used
* ``anomalies``: a list of ``level``, ``code``, ``subject``, ``message``

``freshness_s`` is how far a layer trails the one before it (0: it has read everything), None
when unknown; ``freshness_exact`` false means it is a lower bound.
"""

from __future__ import annotations

from typing import Any

from deltalake import DeltaTable

from ingest.core.settings.ingest_settings import IngestSettings
from ingest.games.seed import Game
from ingest.landing.delta.table_scan import distinct
from ingest.ops.status import layers
from ingest.ops.status.anomalies import EXIT_CODES, anomalies, overall_level
from ingest.ops.status.landing_tables import landing_tables
from ingest.ops.status.tables import open_table
from ingest.ops.status.time_text import iso_utc


def thresholds(settings: IngestSettings) -> dict[str, float]:
    return {
        name: getattr(settings, name) for name in IngestSettings.model_fields if name.startswith("status_")
    }


def schema_ids(bronze: DeltaTable | None) -> list[int]:
    """The distinct schema ids in bronze. The engine keeps only the distinct values: the whole
    column of 90M rows was 360 MB."""
    if bronze is None or not bronze.count():
        return []
    seen = distinct(bronze, "_schema_id").to_pylist()
    return sorted(i for i in seen if i is not None)


def _kafka(partitions: list[dict[str, Any]]) -> dict[str, Any]:
    oldest = [p["oldest_unlanded_at"] for p in partitions if p["oldest_unlanded_at"] is not None]
    return {"lag": sum(p["lag"] for p in partitions), "oldest_unlanded_at": min(oldest, default=None)}


def assemble(
    settings: IngestSettings,
    games: list[Game],
    partitions: list[dict[str, Any]],
    registry: dict[str, Any],
    now: float,
) -> dict[str, Any]:
    """The report from Kafka's ``partitions`` and the ``registry`` check, both already read, and the
    Delta tables as they are: everything but those is read here, without Kafka or Spark."""
    bronze = open_table(settings.landing_table("game_events"))
    readers = layers.bronze_readers(settings, games)
    history = layers.bronze_history(bronze, readers)
    quarantine = layers.quarantine(settings, readers, history, now)
    report: dict[str, Any] = {
        "checked_at": iso_utc(now),
        "consumer_group": settings.group_id,
        "dbt_tables_dir": str(settings.dbt_tables_location),
        "partitions": partitions,
        "kafka": _kafka(partitions),
        "schema_ids": schema_ids(bronze),
        "tables": landing_tables(settings, bronze, partitions, now),
        "silver": layers.silver(settings, games, readers, history, quarantine["by_game"], now),
        "quarantine": quarantine,
        "gold": layers.gold(settings, games, readers, now),
        "registry": registry,
        "thresholds": thresholds(settings),
    }
    report["anomalies"] = anomalies(report, settings)
    report["level"] = overall_level(report["anomalies"])
    report["exit_code"] = EXIT_CODES[report["level"]]
    return report
