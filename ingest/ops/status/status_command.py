"""``ingest status``: one health view from Kafka to gold, with anomalies and a monitor's exit code."""

from __future__ import annotations

import argparse
import json
import textwrap
import time
from typing import Any

from ingest.core.errors import ConfigError
from ingest.core.settings.ingest_settings import IngestSettings
from ingest.core.settings.paths import PROJECT_DIR
from ingest.games.seed import SEED, read_games
from ingest.landing.decode.schema_registry import SchemaRegistryClient
from ingest.ops.status.kafka_offsets import partitions
from ingest.ops.status.render import render
from ingest.ops.status.report import assemble
from ingest.ops.status.tables import open_table

DESCRIPTION = """\
One view from Kafka to gold: each partition's landed offset, high watermark and lag; bronze,
silver per game (and silver_quarantine) and gold per game with rows, last commit and freshness
(how far each trails the layer before it); dead letters of the last hour by stage; the quarantine
rate; the Schema Registry. Reads the Delta logs with delta-rs (no Spark) and asks Kafka for
watermarks and the oldest unlanded message; changes nothing."""

EPILOG = """\
exit codes (for a monitor):
  0  healthy
  1  a warning: lag, a stale layer, dead letters, quarantined rows, a table not built yet
  2  critical: a layer stale past the critical threshold, offsets ahead of the topic's end or
     expired, the registry unreachable; also Kafka unreachable or a bad setting (one line)

thresholds (a value at or past one counts; set like any setting):
"""


def registry_status(settings: IngestSettings) -> dict[str, Any]:
    """GET /subjects with the settings' auth and timeout, as the ingest checks it at start-up."""
    try:
        SchemaRegistryClient(settings).check()
    except ConfigError as err:
        return {"url": settings.registry_url, "reachable": False, "error": str(err)}
    return {"url": settings.registry_url, "reachable": True, "error": None}


def collect(settings: IngestSettings, now: float | None = None) -> dict[str, Any]:
    """The status report (report.py gives its shape). ConfigError when Kafka does not answer."""
    now = time.time() if now is None else now
    found = partitions(settings, open_table(settings.landing_table("game_events")), now)
    games = read_games(PROJECT_DIR / SEED)
    return assemble(settings, games, found, registry_status(settings), now)


def _command(args: argparse.Namespace) -> int:
    from ingest.core.settings.args import settings_from_args

    report = collect(settings_from_args(args))
    print(json.dumps(report, indent=2) if args.json else render(report))
    return int(report["exit_code"])


def _thresholds_help() -> str:
    """The status_* settings, named as each input spells them, with default and description."""
    lines = []
    for name, field in IngestSettings.model_fields.items():
        if name.startswith("status_"):
            lines.append(f"  {name} (GAMELAKE_INGEST_{name.upper()}), default {field.default}:")
            what = (field.description or "").removeprefix("`ingest status` ")
            lines.append(textwrap.fill(what, width=94, initial_indent=" " * 6, subsequent_indent=" " * 6))
    return "\n".join(lines)


def add_parser(subparsers: argparse._SubParsersAction) -> None:
    from ingest.core.settings.args import add_settings_arguments

    parser = subparsers.add_parser(
        "status",
        help="one health view from Kafka to gold: rows, freshness, anomalies; exit 0/1/2",
        description=DESCRIPTION,
        epilog=EPILOG + _thresholds_help(),
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    add_settings_arguments(parser)
    parser.add_argument("--json", action="store_true", help="print the same report as JSON")
    parser.set_defaults(handler=_command, exit_at_once=True)
