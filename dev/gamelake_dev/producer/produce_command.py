"""``ingest produce``: publish a deterministic stream of game events."""

from __future__ import annotations

import argparse
from dataclasses import replace
from datetime import datetime

from gamelake_dev.producer.datagen import DEFAULT_ANCHOR, EventGenerator
from gamelake_dev.producer.publish import publish, validate_versions
from ingest.core.errors import ConfigError
from ingest.core.identifiers import validate_slugs
from ingest.core.settings.endpoints import Endpoints
from ingest.core.settings.paths import PROJECT_DIR
from ingest.core.stop_signals import stop_on_signals, until_set
from ingest.games.seed import SEED, read_games


def chosen_games(listed: list[str] | None) -> list[str]:
    """The games of --games, each active in seeds/games.csv; without --games, every active game."""
    active = [game.slug for game in read_games(PROJECT_DIR / SEED) if game.is_active]
    if listed is None:
        if not active:
            raise ConfigError(f"no games to produce for: mark a game active (is_active true) in {SEED}")
        return active
    refused = [slug for slug in validate_slugs(listed, source="--games entry") if slug not in active]
    if refused:
        verb = "is not an active game" if len(refused) == 1 else "are not active games"
        raise ConfigError(
            f"--games {', '.join(refused)} {verb} in {SEED} (active: {', '.join(active)}). "
            f"Fix: choose active games, or add the game to {SEED} with is_active true"
        )
    return listed


def _int_list(text: str) -> list[int]:
    try:
        return [int(part) for part in text.split(",") if part.strip()]
    except ValueError:
        raise argparse.ArgumentTypeError(
            f"{text!r} is not a comma-separated list of numbers, e.g. 1,2,3"
        ) from None


def _non_negative(text: str) -> int:
    if not text.lstrip("-").isdigit() or int(text) < 0:
        raise argparse.ArgumentTypeError(f"{text!r} is not a count: use a whole number >= 0")
    return int(text)


def _positive_float(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        value = -1.0
    if value <= 0:
        raise argparse.ArgumentTypeError(f"{text!r} is not a rate: use events per second > 0")
    return value


def _timestamp(text: str) -> datetime:
    try:
        value = datetime.fromisoformat(text)
    except ValueError:
        raise argparse.ArgumentTypeError(
            f"{text!r} is not an ISO time, e.g. 2026-11-01T00:00:00+00:00"
        ) from None
    if value.tzinfo is None:
        raise argparse.ArgumentTypeError(f"{text!r} has no time zone: add +00:00")
    return value


def add_parser(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser(
        "produce",
        help="publish demo game events (mixed schema versions) to Kafka",
        description="Register the event schema versions and publish realistic, deterministic events, "
        "keyed by gamer_id. Connection: KAFKA_BOOTSTRAP_SERVERS, SCHEMA_REGISTRY_URL, INGEST_TOPIC.",
    )
    parser.add_argument("--count", type=_non_negative, default=10_000, help="events to send (default 10000)")
    parser.add_argument("--forever", action="store_true", help="send until interrupted (ignores --count)")
    parser.add_argument(
        "--games",
        type=lambda s: [g.strip() for g in s.split(",")],
        default=None,
        help="comma-separated game slugs (default: active games in seeds/games.csv)",
    )
    parser.add_argument(
        "--versions",
        type=_int_list,
        default=[1, 2, 3],
        help="schema versions to spread events over (default 1,2,3)",
    )
    parser.add_argument("--seed", type=int, default=42, help="random seed: same seed, same events")
    parser.add_argument(
        "--anchor",
        type=_timestamp,
        default=DEFAULT_ANCHOR,
        help="events fall in the --days before this time (default 2026-11-01T00:00:00+00:00)",
    )
    parser.add_argument("--days", type=int, default=7, help="spread of event times, in days (default 7)")
    parser.add_argument("--rate", type=_positive_float, default=None, help="limit to this many events/s")
    parser.add_argument("--partitions", type=int, default=6, help="partitions if the topic is created (6)")
    parser.add_argument("--topic", default=None, help="topic (default $INGEST_TOPIC or game-events)")
    parser.add_argument("--no-progress", action="store_true", help="hide the progress bar")
    parser.set_defaults(handler=run)


def run(args: argparse.Namespace) -> int:
    games = chosen_games(args.games)
    versions = validate_versions(args.versions)
    if args.partitions < 1:
        raise ConfigError(f"--partitions {args.partitions} is not a partition count: use 1 or more")
    endpoints = Endpoints.from_env()
    if args.topic:
        endpoints = replace(endpoints, topic=args.topic)
    count = None if args.forever else args.count
    generator = EventGenerator(games, versions, seed=args.seed, anchor=args.anchor, days=args.days)
    print(
        f"producing {'until interrupted' if count is None else count} events for {', '.join(games)} "
        f"as schema versions {versions} to {endpoints.topic} at {endpoints.bootstrap_servers}",
        flush=True,
    )
    with stop_on_signals() as stopping:
        summary = publish(
            endpoints,
            until_set(generator.events(count), stopping),
            versions,
            partitions=args.partitions,
            rate=args.rate,
            total=count,
            progress=not args.no_progress,
        )
    if stopping.is_set():
        print(f"stopped by {stopping.reason}: flushed what was sent", flush=True)
    print(summary.render(games))
    return 0 if summary.failed == 0 else 1
