"""``ingest stack up|down|status|add-user``: the local Kafka + Schema Registry."""

from __future__ import annotations

import argparse
import os
import sys

from ingest.core.errors import ConfigError
from ingest.dev.localstack import stack
from ingest.dev.localstack.kafka_users import add_scram_user

PASSWORD_VARIABLE = "GAMELAKE_SCRAM_PASSWORD"


def _password() -> str:
    """From the environment or standard input, never from the command line (ps shows argv)."""
    password = os.environ.get(PASSWORD_VARIABLE) or sys.stdin.readline().rstrip("\n")
    if len(password) < 8:
        raise ConfigError(
            f"give the user's password (8+ characters) on standard input or in ${PASSWORD_VARIABLE}"
        )
    return password


def _stack_command(args: argparse.Namespace) -> int:
    ports = stack.StackPorts.from_env()
    if args.verb == "up":
        stack.up(ports)
    elif args.verb == "down":
        stack.down(ports)
    elif args.verb == "add-user":
        if not args.user:
            raise ConfigError("add-user needs a user name: ingest stack add-user NAME")
        add_scram_user(ports.bootstrap_servers, args.user, _password())
        print(f"stack: SCRAM-SHA-512 user {args.user!r} can log in at {ports.sasl_ssl_bootstrap_servers}")
    else:
        return 0 if stack.describe(ports) else 1
    return 0


def add_parser(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser(
        "stack",
        help="start, stop or show the local Kafka + Schema Registry; add a SASL user",
        description="The local stack on loopback (GAMELAKE_BIND_HOST moves it). Ports: KAFKA_PORT (9092), "
        "KAFKA_CONTROLLER_PORT (9093), KAFKA_SASL_SSL_PORT (9094), SCHEMA_REGISTRY_PORT (8081), "
        f"SCHEMA_REGISTRY_MANAGEMENT_PORT (9081). add-user NAME reads the password from ${PASSWORD_VARIABLE} "
        "or standard input.",
    )
    parser.add_argument("verb", choices=["up", "down", "status", "add-user"])
    parser.add_argument("user", nargs="?", help="add-user: the SCRAM user name")
    parser.set_defaults(handler=_stack_command)
