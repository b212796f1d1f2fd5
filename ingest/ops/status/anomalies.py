"""What in a status report needs someone: each anomaly has a level, a code, what it concerns and one
line that says what to do. Thresholds are the settings ``status_*``; a value at or past one counts.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from ingest.core.settings.ingest_settings import IngestSettings
from ingest.ops.status.layers import QUARANTINE
from ingest.ops.status.time_text import human_duration

WARNING, CRITICAL = "warning", "critical"
EXIT_CODES = {"healthy": 0, WARNING: 1, CRITICAL: 2}
_RUN_INGEST = "is `ingest run` running and landing?"
_RUN_REFRESH = "is `ingest refresh --continuous` running, and did its last dbt build pass?"

Report = dict[str, Any]
Anomaly = dict[str, str]


def _anomaly(level: str, code: str, subject: str, message: str) -> Anomaly:
    return {"level": level, "code": code, "subject": subject, "message": message}


def _partitions(report: Report) -> Iterator[Anomaly]:
    for p in report["partitions"]:
        where, landed = f"{p['topic']}[{p['partition']}]", p["landed_offset"]
        if p["ahead_of_end"]:
            yield _anomaly(
                CRITICAL,
                "offset_ahead_of_end",
                where,
                f"{where}: bronze landed offset {landed} but the topic ends at {p['high_watermark']}: "
                "topic recreated or wrong cluster; check bootstrap_servers and topics before the ingest runs",
            )
        if p["expired_gap"]:
            yield _anomaly(
                CRITICAL,
                "expired_offsets",
                where,
                f"{where}: offsets {landed + 1}..{p['earliest'] - 1} expired from Kafka before they landed; "
                "raise the topic's retention.ms; on_expired_offset=earliest lets the ingest go on past them",
            )


def _lag(report: Report, settings: IngestSettings) -> Iterator[Anomaly]:
    lag = report["kafka"]["lag"]
    if lag >= settings.status_lag_warn_records:
        yield _anomaly(
            WARNING,
            "consumer_lag",
            "kafka",
            f"{lag} records not landed yet (status_lag_warn_records={settings.status_lag_warn_records}): "
            f"{_RUN_INGEST} More instances, up to the partition count, land faster",
        )


def _registry(report: Report) -> Iterator[Anomaly]:
    registry = report["registry"]
    if not registry["reachable"]:
        yield _anomaly(
            CRITICAL,
            "registry_unreachable",
            "registry",
            f"{registry['error']}; the ingest cannot decode a schema id it has not seen yet",
        )


def _missing(report: Report) -> Iterator[Anomaly]:
    if not report["tables"]["bronze"]["exists"]:
        yield _anomaly(WARNING, "table_missing", "bronze", "bronze is not created yet: run `ingest run`")
    silver = [f"silver_{slug}" for slug, t in report["silver"].items() if t["active"] and not t["exists"]]
    silver += [] if report["quarantine"]["exists"] else [QUARANTINE]
    gold = [
        f"gold_{slug}_{kind}"
        for slug, game in report["gold"].items()
        if game["active"]
        for kind in ("player_agg", "daily_active")
        if not game[kind]["exists"]
    ]
    for layer, names in (("silver", silver), ("gold", gold)):
        if names:
            yield _anomaly(
                WARNING,
                "table_missing",
                layer,
                f"{', '.join(names)} not created yet: run `ingest refresh` (dbt build)",
            )


def _trailing(report: Report) -> Iterator[tuple[str, str, dict[str, Any], str]]:
    """(subject, the layer it trails, its record, the hint) of every judged layer."""
    yield "bronze", "Kafka", report["tables"]["bronze"], _RUN_INGEST
    for slug, record in report["silver"].items():
        if record["active"]:
            yield f"silver_{slug}", "bronze", record, _RUN_REFRESH
    yield QUARANTINE, "bronze", report["quarantine"], _RUN_REFRESH
    for slug, record in report["gold"].items():
        if record["active"]:
            yield f"gold {slug}", f"silver_{slug}", record, _RUN_REFRESH


def _freshness(report: Report, settings: IngestSettings) -> Iterator[Anomaly]:
    for subject, upstream, record, hint in _trailing(report):
        seconds = record["freshness_s"]
        if seconds is None or seconds < settings.status_freshness_warn_s:
            continue
        level = CRITICAL if seconds >= settings.status_freshness_crit_s else WARNING
        at_least = "" if record["freshness_exact"] else "at least "
        message = f"{subject} trails {upstream} by {at_least}{human_duration(seconds)}: {hint}"
        yield _anomaly(level, "stale", subject, message)


def _dead_letters(report: Report, settings: IngestSettings) -> Iterator[Anomaly]:
    for stage, count in sorted(report["tables"]["dead_letters"]["last_hour_by_stage"].items()):
        if count >= settings.status_dead_letters_warn_per_hour:
            yield _anomaly(
                WARNING,
                "dead_letters",
                f"dead_letters {stage}",
                f"stage {stage}: {count} dead letter(s) in the last hour: `ingest dlq list` shows them",
            )


def _quarantine(report: Report, settings: IngestSettings) -> Iterator[Anomaly]:
    limit = settings.status_quarantine_warn_ratio
    silver = report["silver"]
    over = [
        slug
        for slug, t in silver.items()
        if t["active"] and t["quarantine_rows"] and t["quarantine_ratio"] >= limit
    ]
    for slug in over:
        ratio, held = silver[slug]["quarantine_ratio"], silver[slug]["quarantine_rows"]
        yield _anomaly(
            WARNING,
            "quarantine_ratio",
            f"silver_{slug}",
            f"silver_{slug}: {ratio:.1%} of the game's rows are in {QUARANTINE} ({held}): "
            "its reasons column says which expectation they broke",
        )
    held = report["quarantine"]["rows"]
    total = held + sum(t["rows"] for t in silver.values())
    if not over and held and held / total >= limit:  # no game of the seed explains it
        yield _anomaly(
            WARNING,
            "quarantine_ratio",
            QUARANTINE,
            f"{held / total:.1%} of all rows are in {QUARANTINE} ({held}) though no game in the seed "
            f"reaches {limit:.1%}: look for reason unknown_game (a game missing from seeds/games.csv)",
        )


def anomalies(report: Report, settings: IngestSettings) -> list[Anomaly]:
    return [
        *_partitions(report),
        *_registry(report),
        *_lag(report, settings),
        *_missing(report),
        *_freshness(report, settings),
        *_dead_letters(report, settings),
        *_quarantine(report, settings),
    ]


def overall_level(found: list[Anomaly]) -> str:
    levels = {a["level"] for a in found}
    return CRITICAL if CRITICAL in levels else WARNING if WARNING in levels else "healthy"
