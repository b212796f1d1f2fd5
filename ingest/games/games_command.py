"""``ingest games sync [--check]``: regenerate the dbt files that come from the seed and the contract."""

from __future__ import annotations

import argparse
from pathlib import Path

from ingest.core.settings.paths import PROJECT_DIR
from ingest.games.model_files import sync
from ingest.games.seed import SEED, read_games


def _command(args: argparse.Namespace) -> int:
    result = sync(args.project_dir, check=args.check)
    games = read_games(args.project_dir / SEED)
    verb = "would write" if args.check else "wrote"
    for path in result.written:
        print(f"games: {verb} {path}")
    for path in result.removed:
        print(f"games: {'would remove' if args.check else 'removed'} {path}")
    active = sum(g.is_active for g in games)
    state = "match the seed and the bronze contract"
    if result.changed:
        state = "are out of date: run `ingest games sync`" if args.check else "were updated"
    print(f"games: {len(games)} games ({active} active); generated files {state}")
    return 1 if args.check and result.changed else 0


def add_parser(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser(
        "games",
        help="validate seeds/games.csv and generate the per-game dbt models and the contract files",
        description="The games seed (seeds/games.csv) lists the games; the per-game dbt models "
        "and the bronze contract's dbt files are generated from it and from "
        "ingest/core/bronze_contract.yml. `ingest games sync --help` describes the one action.",
    )
    actions = parser.add_subparsers(dest="verb", required=True, metavar="{sync}")
    sync_parser = actions.add_parser(
        "sync",
        help="make the generated dbt files match the seed and the bronze contract",
        description="Validate the games seed (safe slugs, no duplicates) and write the per-game dbt model "
        "files and their yml, and the dbt files that state the bronze column contract "
        "(ingest/core/bronze_contract.yml). Run after changing either.",
    )
    sync_parser.add_argument(
        "--check", action="store_true", help="change nothing; exit 1 if files are out of date"
    )
    sync_parser.add_argument(
        "--project-dir", type=Path, default=PROJECT_DIR, help="the dbt project (default: %(default)s)"
    )
    sync_parser.set_defaults(handler=_command)
