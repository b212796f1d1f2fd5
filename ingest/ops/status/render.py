"""The status report as text: a small table per layer, Kafka to gold, then the anomalies or "healthy"."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from ingest.ops.status.layers import QUARANTINE
from ingest.ops.status.time_text import human_duration

# The columns after a row's name (indented 2, 30 wide) or a section's title (32 wide).
_TABLE = " {:>10} {:>8}  {:20}  {:10}  {}"
_PARTITION = " {:>10} {:>10} {:>10}  {:20}  {}"


def _line(name: str, columns: str, *values: Any) -> str:
    return (f"  {name:30}" + columns.format(*values)).rstrip()


def _title(title: str, columns: str, *headings: str) -> str:
    return (f"{title:32}" + columns.format(*headings, "")).rstrip()


def _freshness(record: dict[str, Any]) -> str:
    if record["freshness_s"] is None:
        return "-"
    return ("" if record["freshness_exact"] else ">= ") + human_duration(record["freshness_s"])


def _row(name: str, record: dict[str, Any], rows: Any, second: Any, note: str = "") -> str:
    if not record["exists"]:
        return _line(name, _TABLE, "-", "-", "-", "-", "not created yet")
    state = "paused" if not record.get("active", True) else _freshness(record)
    return _line(name, _TABLE, rows, second, record["last_commit_at"], state, note)


def _kafka(report: dict[str, Any]) -> Iterator[str]:
    group = f"kafka (group {report['consumer_group']})"
    yield _title(group, _PARTITION, "landed", "high", "lag", "oldest unlanded")
    for p in report["partitions"]:
        flags = [
            flag
            for flag, on in (("AHEAD OF END", p["ahead_of_end"]), ("EXPIRED GAP", p["expired_gap"]))
            if on
        ]
        landed = "-" if p["landed_offset"] is None else p["landed_offset"]
        oldest = p["oldest_unlanded_at"] or "-"
        name = f"{p['topic']}[{p['partition']}]"
        yield _line(name, _PARTITION, landed, p["high_watermark"], p["lag"], oldest, " ".join(flags))


def _layers(report: dict[str, Any]) -> Iterator[str]:
    bronze = report["tables"]["bronze"]
    yield _title("bronze (behind kafka)", _TABLE, "rows", "version", "last commit", "freshness")
    yield _row("game_events", bronze, bronze["rows"], bronze["version"])
    yield _title("silver (behind bronze)", _TABLE, "rows", "version", "last commit", "freshness")
    for slug, t in report["silver"].items():
        share = f"{t['quarantine_ratio']:.1%} quarantined" if t["quarantine_rows"] else ""
        yield _row(slug, t, t["rows"], t["version"], share)
    q = report["quarantine"]
    yield _row(QUARANTINE, q, q["rows"], q["version"])
    yield _title("gold (behind silver)", _TABLE, "players", "days", "last commit", "freshness")
    for slug, g in report["gold"].items():
        yield _row(slug, g, g["player_agg"]["rows"], g["daily_active"]["rows"])


def _footer(report: dict[str, Any]) -> Iterator[str]:
    letters = report["tables"]["dead_letters"]
    recent = ", ".join(f"{stage} {n}" for stage, n in sorted(letters["last_hour_by_stage"].items()))
    yield f"dead letters: {letters['rows']} rows; last hour: {recent or 'none'}"
    yield f"schema ids seen in bronze: {', '.join(map(str, report['schema_ids'])) or 'none'}"
    registry = report["registry"]
    yield f"registry {registry['url']}: {'reachable' if registry['reachable'] else 'NOT reachable'}"
    for name, t in report["tables"].items():
        yield f"{name + ':':14}{t['path']}"
    yield f"{'dbt tables:':14}{report['dbt_tables_dir']}"


def _anomalies(report: dict[str, Any]) -> Iterator[str]:
    if not report["anomalies"]:
        yield "healthy"
        return
    yield "anomalies:"
    for a in report["anomalies"]:
        yield f"  {a['level']:9}{a['message']}"


def render(report: dict[str, Any]) -> str:
    title = f"gamelake status {report['checked_at']}: {report['level']} (exit {report['exit_code']})"
    return "\n".join([title, *_kafka(report), *_layers(report), *_footer(report), *_anomalies(report)])
