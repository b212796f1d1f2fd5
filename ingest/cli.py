"""The ``ingest`` console script: one subcommand per job.

Each subcommand lives in its own module and registers itself through ``add_parser``;
this file only wires them together and turns gamelake's errors into clear messages.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable

from ingest.errors import IngestError

Handler = Callable[[argparse.Namespace], int]


def _stack_command(args: argparse.Namespace) -> int:
    from ingest.localstack import stack

    ports = stack.StackPorts.from_env()
    if args.verb == "up":
        stack.up(ports)
    elif args.verb == "down":
        stack.down(ports)
    else:
        return 0 if stack.describe(ports) else 1
    return 0


def _add_stack(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser(
        "stack",
        help="start, stop or show the local Kafka + Schema Registry",
        description="The local stack on loopback. Ports: KAFKA_PORT (9092), KAFKA_CONTROLLER_PORT (9093), "
        "SCHEMA_REGISTRY_PORT (8081), SCHEMA_REGISTRY_MANAGEMENT_PORT (9081).",
    )
    parser.add_argument("verb", choices=["up", "down", "status"])
    parser.set_defaults(handler=_stack_command)


def build_parser() -> argparse.ArgumentParser:
    from ingest import games, lakehouse, replay, service, status
    from ingest.producer import cli as produce_cli

    parser = argparse.ArgumentParser(prog="ingest", description="gamelake: Kafka protobuf events -> Delta")
    subparsers = parser.add_subparsers(dest="command", required=True)
    produce_cli.add_parser(subparsers)
    games.add_parser(subparsers)
    lakehouse.add_parser(subparsers)
    service.add_parser(subparsers)
    status.add_parser(subparsers)
    replay.add_parser(subparsers)
    _add_stack(subparsers)
    return parser


def main(argv: list[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    handler: Handler = args.handler
    try:
        return handler(args)
    except IngestError as err:
        print(f"ingest {args.command}: error: {err}", file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        print(f"ingest {args.command}: interrupted", file=sys.stderr)
        return 130


if __name__ == "__main__":
    sys.exit(main())
