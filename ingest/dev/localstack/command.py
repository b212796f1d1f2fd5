"""``ingest stack up|down|status``: the local Kafka + Schema Registry."""

from __future__ import annotations

import argparse

from ingest.dev.localstack import stack


def _stack_command(args: argparse.Namespace) -> int:
    ports = stack.StackPorts.from_env()
    if args.verb == "up":
        stack.up(ports)
    elif args.verb == "down":
        stack.down(ports)
    else:
        return 0 if stack.describe(ports) else 1
    return 0


def add_parser(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser(
        "stack",
        help="start, stop or show the local Kafka + Schema Registry",
        description="The local stack on loopback. Ports: KAFKA_PORT (9092), KAFKA_CONTROLLER_PORT (9093), "
        "SCHEMA_REGISTRY_PORT (8081), SCHEMA_REGISTRY_MANAGEMENT_PORT (9081).",
    )
    parser.add_argument("verb", choices=["up", "down", "status"])
    parser.set_defaults(handler=_stack_command)
