"""``ingest run``: settings from flags, environment and file; metrics, health and dashboard; the service."""

from __future__ import annotations

import argparse
import gc
import logging

from ingest.core.errors import ConfigError
from ingest.core.logs.setup import add_log_format_argument, configure_logging
from ingest.core.metrics import prometheus as metrics
from ingest.core.metrics.dashboard_page import render_page
from ingest.core.metrics.history import Kind, MetricHistory, Panel
from ingest.core.settings.args import add_settings_arguments, settings_from_args
from ingest.landing import crash_points
from ingest.landing.service.service import Service

DASHBOARD_PANELS = (
    Panel(
        "Consumer lag (records)",
        "gamelake_ingest_consumer_lag",
        note="records in Kafka not yet landed, all partitions added up",
    ),
    Panel("Rows landed per second", "gamelake_ingest_rows_landed_total", Kind.RATE),
    Panel(
        "Dead letters per second",
        "gamelake_ingest_dead_letters_total",
        Kind.RATE,
        note="records sent to dead letters, every stage added up",
    ),
    Panel(
        "Seconds since the last bronze commit",
        "gamelake_ingest_last_commit_timestamp_seconds",
        Kind.SINCE,
        note="grows while idle too (nothing to land, nothing to commit); 0 before the first commit",
    ),
    Panel(
        "Schema Registry up",
        "gamelake_ingest_registry_up",
        note="1 when the registry answered the service's last need of it, 0 after a batch dropped for it",
    ),
)


def _run_command(args: argparse.Namespace) -> int:
    extra = {
        "flush_rows": args.flush_rows,
        "flush_interval_s": args.flush_interval_s,
        "metrics_port": args.metrics_port,
        "log_format": args.log_format,
    }
    settings = settings_from_args(args, **extra)
    configure_logging(settings.log_level, settings.log_format)
    logging.getLogger("deltalake").setLevel(logging.WARNING)
    crash_points.install()
    service = Service(settings, until_caught_up=args.until_caught_up)
    server = None
    history = MetricHistory(metrics.REGISTRY, DASHBOARD_PANELS)
    if settings.metrics_port:
        try:
            server = metrics.serve(
                settings.metrics_host,
                settings.metrics_port,
                service.health,
                dashboard=lambda: render_page("gamelake ingest", history.series(), service.health()),
            )
        except OSError as err:
            raise ConfigError(f"metrics port {settings.metrics_port} unavailable: {err.strerror}") from None
        history.start()
    # Everything allocated so far (imports, clients) lives as long as the process: freezing it
    # spares the full collections that batches of ~100k records trigger from rescanning it.
    gc.collect()
    gc.freeze()
    try:
        return service.run()
    finally:
        if server is not None:
            server.shutdown()
            history.stop()


def add_parser(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser(
        "run",
        help="consume Kafka and land events exactly once in bronze Delta",
        description="Runs until stopped (SIGTERM/SIGINT flush, commit and exit). Settings: flags, "
        "GAMELAKE_INGEST_* environment variables, --config file.",
    )
    add_settings_arguments(parser)
    parser.add_argument("--until-caught-up", action="store_true", help="exit once every partition's lag is 0")
    parser.add_argument("--flush-rows", type=int, help="commit a batch at this many records")
    parser.add_argument("--flush-interval-s", type=float, help="commit a batch at this age (seconds)")
    parser.add_argument("--metrics-port", type=int, help="port of /metrics and /healthz (0 disables)")
    add_log_format_argument(parser)
    parser.set_defaults(handler=_run_command)
