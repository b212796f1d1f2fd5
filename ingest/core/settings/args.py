"""The settings flags every ingest subcommand shares (``run``, ``status``, ``dlq``)."""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

from ingest.core.settings.ingest_settings import IngestSettings, load_settings


def _kv(text: str) -> tuple[str, str]:
    key, sep, value = text.partition("=")
    if not sep or not key:
        raise argparse.ArgumentTypeError(f"{text!r} is not key=value, e.g. fetch.min.bytes=1")
    return key, value


def add_settings_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--config", type=Path, help="TOML settings file (flags and env win over it)")
    parser.add_argument("--bootstrap-servers", help="Kafka bootstrap servers")
    parser.add_argument("--topic", action="append", dest="topics", help="topic to consume (repeatable)")
    parser.add_argument("--group-id", help="consumer group")
    parser.add_argument("--registry-url", help="Schema Registry URL (Confluent API)")
    parser.add_argument("--warehouse-dir", type=Path, help="lakehouse root; tables under <dir>/bronze")
    parser.add_argument("--kafka", action="append", type=_kv, metavar="KEY=VALUE", help="librdkafka setting")


def settings_from_args(args: argparse.Namespace, **extra: Any) -> IngestSettings:
    flags = {
        "bootstrap_servers": args.bootstrap_servers,
        "topics": args.topics,
        "group_id": args.group_id,
        "registry_url": args.registry_url,
        "warehouse_dir": args.warehouse_dir,
        "kafka": dict(args.kafka) if args.kafka else None,
        **extra,
    }
    return load_settings(args.config, **flags)
