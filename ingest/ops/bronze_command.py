"""``ingest bronze migrate-native-types``: operator commands on the bronze table itself."""

from __future__ import annotations

import argparse
import json
import sys
import time

from ingest.ops.migrations.migrate_json_text import Progress, migrate

_PROGRESS_EVERY_S = 2.0


def _progress() -> Progress:
    """A line on stderr at most every few seconds, and at the end: a long rewrite shows it moves."""
    last = [0.0]

    def report(done: int, total: int) -> None:
        now = time.monotonic()
        if done == total or now - last[0] >= _PROGRESS_EVERY_S:
            last[0] = now
            share = f" ({100 * done / total:.0f} %)" if total else ""
            print(f"migrate-native-types: {done:,} / {total:,} rows{share}", file=sys.stderr, flush=True)

    return report


def _migrate_command(args: argparse.Namespace) -> int:
    from ingest.core.settings.args import settings_from_args
    from ingest.landing.decode.schema_registry import SchemaRegistryClient

    settings = settings_from_args(args)
    summary = migrate(
        settings.landing_table("game_events"),
        SchemaRegistryClient(settings),
        settings.app_id,
        _progress(),
        args.dry_run,
        settings.dbt_tables_location,
    )
    print(json.dumps(summary, indent=2))
    return 0


def add_parser(subparsers: argparse._SubParsersAction) -> None:
    from ingest.core.settings.args import add_settings_arguments

    parser = subparsers.add_parser(
        "bronze",
        help="operator commands on the bronze table (the service stopped)",
        description="`ingest bronze ACTION --help` describes each action.",
    )
    actions = parser.add_subparsers(dest="verb", required=True, metavar="{migrate-native-types}")
    migrating = actions.add_parser(
        "migrate-native-types",
        help="convert the JSON text columns of a bronze landed before native types, and silver's copies",
        description="STOP THE SERVICE AND DBT BUILDS FIRST, and bring silver and gold up to date "
        "(`ingest refresh`). A bronze landed before native types holds nested messages, repeated "
        "fields, maps, wrappers and Duration as JSON text, and the silver tables built on it hold "
        "that text too. This rebuilds each row's fields from the text with the registry's schema "
        "and rewrites each such silver table, then bronze, in one Delta commit each, with the "
        "native types: every row, every other column, the table properties and the Kafka offsets "
        "kept; silver's and gold's marks move past the rewrites. Every table is converted before "
        "anything commits: a text that cannot be read back stops it, naming the column and the "
        "row, with nothing changed. A run stopped half-way is finished by running it again. "
        "Prints a JSON summary; progress goes to stderr.",
    )
    add_settings_arguments(migrating)
    migrating.add_argument("--dry-run", action="store_true", help="read and convert every row, write nothing")
    migrating.set_defaults(handler=_migrate_command)
