"""``ingest status``: where the tables are, their row counts, offsets and lag, schema ids seen."""

from __future__ import annotations

import argparse
import json
import uuid
from pathlib import Path
from typing import Any

import pyarrow.compute as pc
from confluent_kafka import Consumer, KafkaException
from confluent_kafka import TopicPartition as KafkaTopicPartition
from deltalake import DeltaTable

from ingest.core.errors import ConfigError
from ingest.core.kafka_config import consumer_config
from ingest.core.settings import IngestSettings
from ingest.landing.offsets import TopicPartition, txn_app_id


def _table(path: Path) -> DeltaTable | None:
    return DeltaTable(str(path)) if DeltaTable.is_deltatable(str(path)) else None


def _tables(settings: IngestSettings) -> dict[str, dict[str, Any]]:
    out = {}
    for name, path in (
        ("bronze", settings.bronze_path),
        ("dead_letters", settings.dead_letters_path),
        ("event_log", settings.event_log_path),
    ):
        table = _table(path)
        out[name] = {
            "path": str(path),
            "exists": table is not None,
            "version": table.version() if table else None,
            "rows": table.count() if table else 0,
        }
    return out


def _partitions(settings: IngestSettings, bronze: DeltaTable | None) -> list[dict[str, Any]]:
    consumer = Consumer(
        {**consumer_config(settings), "group.id": f"{settings.group_id}-status-{uuid.uuid4().hex}"}
    )
    try:
        metadata = consumer.list_topics(timeout=10)
        rows = []
        for topic in settings.topics:
            if topic not in metadata.topics:
                raise ConfigError(f"topic {topic} does not exist on {settings.bootstrap_servers}")
            for partition in sorted(metadata.topics[topic].partitions):
                ktp = KafkaTopicPartition(topic, partition)
                low, high = consumer.get_watermark_offsets(ktp, timeout=10)
                app = txn_app_id(settings.app_id, TopicPartition(topic, partition))
                landed = bronze.transaction_version(app) if bronze else None
                next_offset = low if landed is None else landed + 1
                rows.append(
                    {
                        "topic": topic,
                        "partition": partition,
                        "landed_offset": landed,
                        "earliest": low,
                        "high_watermark": high,
                        "lag": max(0, high - next_offset),
                        "expired_gap": landed is not None and landed + 1 < low,
                    }
                )
        return rows
    except KafkaException as err:
        raise ConfigError(
            f"Kafka at {settings.bootstrap_servers} did not answer: {err.args[0].str()}"
        ) from None
    finally:
        consumer.close()


def collect(settings: IngestSettings) -> dict[str, Any]:
    bronze = _table(settings.bronze_path)
    schema_ids: list[int] = []
    if bronze is not None and bronze.count():
        ids = bronze.to_pyarrow_dataset().to_table(columns=["_schema_id"]).column("_schema_id")
        schema_ids = sorted(pc.unique(ids).to_pylist())
    return {
        "tables": _tables(settings),
        "consumer_group": settings.group_id,
        "partitions": _partitions(settings, bronze),
        "schema_ids": schema_ids,
    }


def render(report: dict[str, Any]) -> str:
    lines = ["tables:"]
    for name, t in report["tables"].items():
        state = f"{t['rows']} rows, version {t['version']}" if t["exists"] else "not created yet"
        lines.append(f"  {name:13} {t['path']}  ({state})")
    lines.append(f"partitions (group {report['consumer_group']}):")
    lines.append(f"  {'topic[partition]':40} {'landed':>10} {'high':>10} {'lag':>8}")
    for p in report["partitions"]:
        landed = "-" if p["landed_offset"] is None else p["landed_offset"]
        flag = "  EXPIRED GAP" if p["expired_gap"] else ""
        name = f"{p['topic']}[{p['partition']}]"
        lines.append(f"  {name:40} {landed:>10} {p['high_watermark']:>10} {p['lag']:>8}{flag}")
    lines.append(f"schema ids seen: {', '.join(map(str, report['schema_ids'])) or 'none'}")
    return "\n".join(lines)


def _command(args: argparse.Namespace) -> int:
    from ingest.core.settings_args import settings_from_args

    report = collect(settings_from_args(args))
    print(json.dumps(report, indent=2) if args.json else render(report))
    return 0


def add_parser(subparsers: argparse._SubParsersAction) -> None:
    from ingest.core.settings_args import add_settings_arguments

    parser = subparsers.add_parser(
        "status",
        help="where the ingest tables are, row counts, offsets and lag",
        description="Print the bronze, dead-letter and event-log tables (path, rows, Delta version), each "
        "partition's landed offset, high watermark and lag, and the schema ids seen in bronze. Reads "
        "the tables and asks Kafka for watermarks; changes nothing.",
    )
    add_settings_arguments(parser)
    parser.add_argument("--json", action="store_true", help="print JSON")
    parser.set_defaults(handler=_command)
