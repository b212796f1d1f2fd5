"""The ``ingest`` console script: one subcommand per job.

Each subcommand lives in a module of its own (``*_command.py``) and registers itself through
``add_parser``; subcommands of other installed packages come in through the entry-point group
``gamelake.commands`` (the dev tooling's ``stack`` and ``produce``). This file only wires them
together and turns gamelake's errors into clear messages.
"""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Callable, Sequence
from importlib.metadata import entry_points
from typing import Any

from ingest.core.errors import ConfigError, IngestError
from ingest.core.logs.setup import report_failure

Handler = Callable[[argparse.Namespace], int]
# Subcommands from other installed packages: the dev tooling's `ingest stack` and `ingest produce`.
PLUGIN_GROUP = "gamelake.commands"


class CommandParser(argparse.ArgumentParser):
    """The parser of ``ingest`` and, through argparse's ``parser_class``, of every subcommand below it.

    A flag is never abbreviated (``--unt`` is not ``--until-caught-up``), and an unknown argument is
    reported with the usage of the subcommand that was given it, not with the top level's.
    """

    def __init__(self, **kwargs: Any) -> None:
        super().__init__(**{**kwargs, "allow_abbrev": False})

    def parse_known_args(  # type: ignore[override]
        self, args: Sequence[str] | None = None, namespace: argparse.Namespace | None = None
    ) -> tuple[argparse.Namespace, list[str]]:
        parsed, unknown = super().parse_known_args(args, namespace)
        if unknown:
            self.error(f"unrecognized arguments: {' '.join(unknown)}")
        return parsed, unknown


def build_parser() -> argparse.ArgumentParser:
    from ingest.games import games_command
    from ingest.landing.service import run_command
    from ingest.ops import bronze_command, dbt_build_command, dlq_command, refresh_command
    from ingest.ops.status import status_command

    parser = CommandParser(
        prog="ingest",
        description="gamelake: Kafka protobuf events -> Delta. `ingest COMMAND --help` describes each one.",
    )
    subparsers = parser.add_subparsers(dest="command", required=True)
    for command in (
        games_command,
        dbt_build_command,
        refresh_command,
        run_command,
        status_command,
        dlq_command,
        bronze_command,
    ):
        command.add_parser(subparsers)
    for plugin in entry_points(group=PLUGIN_GROUP):
        plugin.load()(subparsers)
    return parser


def main(argv: list[str] | None = None) -> int:
    return _dispatch(build_parser().parse_args(argv))


def run() -> None:
    """The console script's and ``python -m ingest.cli``'s entry point: ``main`` and its exit code.

    A command that sets ``exit_at_once`` (``status``) leaves through ``os._exit`` once its output
    is flushed: after a complete report, Arrow's native thread pools could still abort the
    interpreter's teardown (``terminate called without an active exception``, SIGABRT), turning a
    monitor's 0/1/2 into a signal. Such a command holds nothing that needs atexit handlers.
    """
    args = build_parser().parse_args()
    code = _dispatch(args)
    if getattr(args, "exit_at_once", False):
        sys.stdout.flush()
        sys.stderr.flush()
        os._exit(code)
    else:
        sys.exit(code)


def _dispatch(args: argparse.Namespace) -> int:
    handler: Handler = args.handler
    try:
        return handler(args)
    except ConfigError as err:  # the input is wrong: the message names it and the fix
        return _failed(args.command, f"error: {err}", 2)
    except IngestError as err:
        return _failed(args.command, f"error: {err}", 1)
    except KeyboardInterrupt:
        return _failed(args.command, "interrupted", 130)


def _failed(command: str, what: str, exit_code: int) -> int:
    """One last line on stderr; a JSON log line when the command logs JSON lines."""
    report_failure(f"ingest {command}: {what}", exit_code)
    return exit_code


if __name__ == "__main__":
    run()
