"""The ``ingest`` console script as an operator meets it: help, usage errors and config errors.

Most tests run the real entry point in a subprocess. Nothing here needs a service: Kafka and the
registry point at a closed port, so a command that tried to connect would fail or hang instead.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
from collections import Counter
from collections.abc import Iterator

import pytest
from gamelake_dev.producer.publish import ProduceSummary

from ingest.cli import build_parser
from ingest.core.errors import ConfigError
from ingest.core.settings.ingest_settings import load_settings
from ingest.core.settings.paths import PROJECT_DIR

CLOSED_PORT = "127.0.0.1:1"


def _env(tmp_path, **variables: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("GAMELAKE_INGEST_")}
    env.update(
        KAFKA_BOOTSTRAP_SERVERS=CLOSED_PORT,
        SCHEMA_REGISTRY_URL=f"http://{CLOSED_PORT}",
        GAMELAKE_INGEST_WAREHOUSE_DIR=str(tmp_path),
        **variables,
    )
    return env


def ingest(env: dict[str, str], *args: str, timeout: float = 30) -> subprocess.CompletedProcess[str]:
    command = [sys.executable, "-m", "ingest.cli", *args]
    return subprocess.run(command, env=env, cwd=PROJECT_DIR, capture_output=True, text=True, timeout=timeout)


def _parsers(parser: argparse.ArgumentParser) -> Iterator[tuple[argparse.ArgumentParser, str | None]]:
    """Every parser under ``parser`` (itself included), with the help its parent lists it with."""
    yield parser, None
    for action in parser._subparsers._group_actions if parser._subparsers else []:
        assert isinstance(action, argparse._SubParsersAction)
        helps = {choice.dest: choice.help for choice in action._choices_actions}
        for name, sub in action.choices.items():
            for nested, nested_help in _parsers(sub):
                yield nested, helps[name] if nested is sub else nested_help


def test_every_command_and_action_has_help_and_a_description():
    commands = list(_parsers(build_parser()))[1:]
    assert {p.prog for p, _ in commands} >= {"ingest run", "ingest dlq list", "ingest stack add-user"}
    for parser, help_text in commands:
        assert help_text and parser.description, f"{parser.prog} needs a help line and a description"


def test_no_parser_accepts_abbreviated_flags():
    assert all(not parser.allow_abbrev for parser, _ in _parsers(build_parser()))


@pytest.mark.parametrize(
    ("argv", "usage"),
    [
        (["run", "--unt"], "usage: ingest run"),
        (["run", "--bogus"], "usage: ingest run"),
        (["status", "--jso"], "usage: ingest status"),
        (["dlq", "list", "--dry-run"], "usage: ingest dlq list"),
        (["games", "sync", "--che"], "usage: ingest games sync"),
    ],
)
def test_a_bad_flag_prints_the_usage_of_its_own_subcommand(argv, usage, tmp_path):
    result = ingest(_env(tmp_path), *argv)
    assert result.returncode == 2, result.stderr
    assert result.stderr.startswith(usage)
    assert f"unrecognized arguments: {argv[-1]}" in result.stderr


def test_status_help_describes_the_command(tmp_path):
    result = ingest(_env(tmp_path), "status", "--help")
    assert result.returncode == 0
    assert "partition's landed offset, high watermark and lag" in result.stdout


def test_each_dlq_action_describes_itself(tmp_path):
    listing, replaying = (ingest(_env(tmp_path), "dlq", verb, "--help").stdout for verb in ("list", "replay"))
    assert listing.startswith("usage: ingest dlq list") and "Changes nothing." in listing
    assert replaying.startswith("usage: ingest dlq replay") and "--dry-run" in replaying
    assert "--dry-run" not in listing


@pytest.mark.parametrize("game", ["not_a_game", "retro_arena"])  # unknown; in the seed but inactive
def test_produce_refuses_a_game_not_active_in_the_seed_before_connecting(game, tmp_path):
    result = ingest(_env(tmp_path), "produce", "--games", f"space_raiders,{game}", "--count", "1", timeout=10)
    assert result.returncode == 2
    (line,) = result.stderr.splitlines()
    assert f"--games {game} is not an active game in seeds/games.csv" in line
    assert "space_raiders" in line.partition("(active: ")[2] and "Fix:" in line


def test_the_produce_summary_lists_every_requested_game_even_with_no_events():
    summary = ProduceSummary({1: 11}, per_game=Counter(kart_legends=1), per_version=Counter({1: 1}))
    rendered = summary.render(["puzzle_pop", "kart_legends"]).splitlines()
    assert "  per game:    kart_legends=1, puzzle_pop=0" in rendered


@pytest.mark.parametrize("command", ["status", "run", "dlq list"])
def test_a_bad_environment_variable_is_one_line_naming_it(command, tmp_path):
    result = ingest(_env(tmp_path, GAMELAKE_INGEST_TOPICS="plain"), *command.split(), timeout=10)
    assert result.returncode == 2
    assert len(result.stderr.splitlines()) <= 3 and "Traceback" not in result.stderr
    assert (
        f"""ingest {command.split()[0]}: error: GAMELAKE_INGEST_TOPICS='plain' is not valid: """
        """expected a JSON list such as '["game-events"]'. Fix the environment variable."""
    ) in result.stderr


def test_a_bad_secret_environment_variable_is_named_but_not_echoed(tmp_path):
    unparsable = '{"sasl.password": "hunter2"'
    result = ingest(_env(tmp_path, GAMELAKE_INGEST_KAFKA=unparsable), "status", timeout=10)
    assert result.returncode == 2 and len(result.stderr.splitlines()) <= 3
    assert "GAMELAKE_INGEST_KAFKA (value not shown" in result.stderr and "hunter2" not in result.stderr


@pytest.mark.parametrize(
    ("flags", "env", "file", "message"),
    [
        (
            {"flush_rows": 0},
            {"GAMELAKE_INGEST_FLUSH_ROWS": "5"},
            "",
            "--flush-rows=0 is not valid: input should be greater",
        ),
        ({}, {"GAMELAKE_INGEST_LOG_LEVEL": "loud"}, "", "GAMELAKE_INGEST_LOG_LEVEL='loud' is not valid"),
        ({}, {}, 'flush_rows = "x"', "flush_rows='x' in "),
        ({}, {}, "bogus = 1", "bogus in "),
        ({}, {"INGEST_TOPIC": ""}, "", "INGEST_TOPIC='' is not valid: name at least one topic"),
        ({}, {}, "flush_rows =", "is not valid TOML"),
    ],
)
def test_a_settings_error_names_the_input_that_holds_the_value(
    flags, env, file, message, tmp_path, monkeypatch
):
    for name, value in env.items():
        monkeypatch.setenv(name, value)
    config = tmp_path / "ingest.toml"
    config.write_text(file)
    with pytest.raises(ConfigError) as err:
        load_settings(config, **flags)
    assert message in str(err.value) and "\n" not in str(err.value)
    assert str(err.value).endswith(
        ("Fix the flag.", "Fix the environment variable.", "Fix the settings file.")
    )


@pytest.mark.parametrize(
    "file",
    ['sasl_password = 5\nkafka = {"sasl.password" = "hunter2", "x" = 5}', 'ssl_key_password = ["hunter2"]'],
)
def test_a_bad_secret_in_the_settings_file_is_not_echoed(file, tmp_path):
    config = tmp_path / "ingest.toml"
    config.write_text(file)
    with pytest.raises(ConfigError) as err:
        load_settings(config)
    assert "value not shown" in str(err.value) and "hunter2" not in str(err.value)


@pytest.mark.parametrize(("command", "at_once"), [(["status"], True), (["games", "sync"], False)])
def test_only_status_leaves_through_os_exit_with_its_exit_code(monkeypatch, command, at_once) -> None:
    """`status` skips the interpreter's teardown (a native pool could abort it after the report);
    every other command exits normally, so atexit handlers (Spark's) still run."""
    import ingest.cli as cli

    left: list[tuple[str, int]] = []
    monkeypatch.setattr(sys, "argv", ["ingest", *command])
    monkeypatch.setattr(cli, "_dispatch", lambda args: 1)
    monkeypatch.setattr(os, "_exit", lambda code: left.append(("os._exit", code)))
    monkeypatch.setattr(sys, "exit", lambda code: left.append(("sys.exit", code)))
    cli.run()
    assert left == [("os._exit" if at_once else "sys.exit", 1)]
