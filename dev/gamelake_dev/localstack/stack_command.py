"""``ingest stack up|down|status|add-user``: the local Kafka, Schema Registry and S3 server."""

from __future__ import annotations

import argparse
import os
import sys

from gamelake_dev.localstack import stack
from gamelake_dev.localstack.kafka_users import add_scram_user
from ingest.core.errors import ConfigError

PASSWORD_VARIABLE = "GAMELAKE_SCRAM_PASSWORD"


def _password() -> str:
    """From the environment or standard input, never from the command line (ps shows argv)."""
    password = os.environ.get(PASSWORD_VARIABLE) or sys.stdin.readline().rstrip("\n")
    if len(password) < 8:
        raise ConfigError(
            f"give the user's password (8+ characters) on standard input or in ${PASSWORD_VARIABLE}"
        )
    return password


def _up(_args: argparse.Namespace) -> int:
    stack.up(stack.StackPorts.from_env())
    return 0


def _down(_args: argparse.Namespace) -> int:
    stack.down(stack.StackPorts.from_env())
    return 0


def _status(_args: argparse.Namespace) -> int:
    return 0 if stack.describe(stack.StackPorts.from_env()) else 1


def _add_user(args: argparse.Namespace) -> int:
    ports = stack.StackPorts.from_env()
    add_scram_user(ports.bootstrap_servers, args.user, _password())
    print(f"stack: SCRAM-SHA-512 user {args.user!r} can log in at {ports.sasl_ssl_bootstrap_servers}")
    return 0


def add_parser(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser(
        "stack",
        help="start, stop or show the local Kafka, Schema Registry and S3 server; add a SASL user",
        description="The local stack on loopback (GAMELAKE_BIND_HOST moves it). Ports: KAFKA_PORT (9092), "
        "KAFKA_CONTROLLER_PORT (9093), KAFKA_SASL_SSL_PORT (9094), SCHEMA_REGISTRY_PORT (8081), "
        "SCHEMA_REGISTRY_MANAGEMENT_PORT (9081), S3_PORT (9190). `ingest stack ACTION --help` describes each "
        "action.",
    )
    actions = parser.add_subparsers(dest="verb", required=True, metavar="{up,down,status,add-user}")
    up = actions.add_parser(
        "up",
        help="start Kafka, the registry and the S3 server, or leave them running (idempotent)",
        description="Start the Kafka broker (KRaft), the schema registry and the S3 server (S3Proxy, "
        "bucket gamelake) unless they already run, wait until all answer, and print where they listen, "
        "where their logs are, and the AWS variables that point a client at the S3 server.",
    )
    up.set_defaults(handler=_up)
    down = actions.add_parser(
        "down",
        help="stop Kafka, the registry and the S3 server (idempotent); their data stays",
        description="Stop the S3 server, the registry and the broker if they run. Their data under .stack/ "
        "stays, so topics, schema ids and objects survive the next `ingest stack up`.",
    )
    down.set_defaults(handler=_down)
    status = actions.add_parser(
        "status",
        help="show whether Kafka, the registry and the S3 server run and are healthy; exit 1 if not",
        description="Print whether the broker, the registry and the S3 server run and answer, with their "
        "addresses and log files. Exit code 1 unless all are healthy.",
    )
    status.set_defaults(handler=_status)
    add_user = actions.add_parser(
        "add-user",
        help="add a SCRAM-SHA-512 user to the SASL_SSL listener",
        description=f"Add (or update) a SCRAM-SHA-512 user who can log in at the SASL_SSL listener. The "
        f"password comes from ${PASSWORD_VARIABLE} or standard input, never from the command line.",
    )
    add_user.add_argument("user", help="the SCRAM user name")
    add_user.set_defaults(handler=_add_user)
