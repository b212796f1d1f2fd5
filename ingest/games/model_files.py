"""Generate the dbt project's data-driven files and keep them in step with their sources.

dbt cannot make model nodes from data, so ``ingest games sync`` writes thin per-game files (a
config plus one macro call) and their yml from ``seeds/games.csv``, and everything that states
the bronze column contract from ``ingest/core/bronze_contract.yml``. The macros hold all the
logic; ``data-tests/assert_games_seed_matches_models.sql`` fails ``dbt build`` when the seed
and these files disagree.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

from ingest.core.contract import DEFAULT_PATH, Contract, load_contract
from ingest.core.settings.paths import PROJECT_DIR
from ingest.games import contract_files, game_yml
from ingest.games.layout import (
    CONTRACT_DOCS,
    CONTRACT_MACROS,
    FROM_SEED,
    GAMES_LIST,
    GENERATED_DIRS,
    GOLD_KINDS,
    GOLD_YML,
    MARKER,
    SILVER_YML,
    SOURCE_YML,
    STAGING_YML,
    gold_table,
    silver_table,
)
from ingest.games.seed import SEED, Game, read_games


def _model_sql(game: Game, macro: str) -> str:
    # A silver model that reads bronze itself (a first build or a catch-up) quotes the
    # pass-through columns, whose names come from data (RF06), as staging does.
    noqa = "  -- noqa: RF06" if macro == "silver_game_events" else ""
    return (
        f"{{#- {FROM_SEED} -#}}\n"
        f"{{{{ config(tags=['game', 'game_{game.slug}'], meta={{'game_slug': '{game.slug}'}}) }}}}\n"
        f"{{{{ {macro}('{game.slug}') }}}}{noqa}\n"
    )


def _games_list_sql(games: list[Game]) -> str:
    slugs = "".join(f"\n        '{g.slug}'," for g in games)
    return (
        f"{{#- {FROM_SEED}.\n"
        "    The game slugs of seeds/games.csv, in seed order: what union_games iterates over. -#}\n"
        "{% macro gamelake_games() %}\n"
        f"    {{{{ return([{slugs}\n    ]) }}}}\n"
        "{% endmacro %}\n"
    )


def render(games: list[Game], contract: Contract) -> dict[Path, str]:
    """Every generated file (path relative to the dbt project) and its content."""
    files = {
        GAMES_LIST: _games_list_sql(games),
        CONTRACT_MACROS: contract_files.contract_macros(contract),
        CONTRACT_DOCS: contract_files.contract_docs(contract),
        STAGING_YML: contract_files.staging_yml(contract),
        SOURCE_YML: contract_files.source_yml(contract),
    }
    silver_dir, gold_dir = GENERATED_DIRS
    for game in games:
        files[silver_dir / f"{silver_table(game.slug)}.sql"] = _model_sql(game, "silver_game_events")
        for kind in GOLD_KINDS:
            files[gold_dir / f"{gold_table(game.slug, kind)}.sql"] = _model_sql(game, f"gold_{kind}")
    files[SILVER_YML] = game_yml.silver_yml(games, contract)
    files[GOLD_YML] = game_yml.gold_yml(games)
    return files


@dataclass
class SyncResult:
    written: list[Path]
    removed: list[Path]

    @property
    def changed(self) -> bool:
        return bool(self.written or self.removed)


def _stale_files(project_dir: Path, keep: Iterable[Path]) -> list[Path]:
    keep_set = set(keep)
    stale = []
    for folder in GENERATED_DIRS:
        for path in sorted((project_dir / folder).glob("*")):
            relative = path.relative_to(project_dir)
            if relative not in keep_set and path.is_file() and MARKER in path.read_text(errors="replace"):
                stale.append(relative)
    return stale


def sync(
    project_dir: Path = PROJECT_DIR, *, check: bool = False, contract_path: Path = DEFAULT_PATH
) -> SyncResult:
    """Make the generated files match the seed and the contract. With ``check``, only report."""
    files = render(read_games(project_dir / SEED), load_contract(contract_path))
    written = [path for path, text in files.items() if _read(project_dir / path) != text]
    removed = _stale_files(project_dir, files)
    if not check:
        for path in written:
            (project_dir / path).parent.mkdir(parents=True, exist_ok=True)
            (project_dir / path).write_text(files[path])
        for path in removed:
            (project_dir / path).unlink()
    return SyncResult(written, removed)


def _read(path: Path) -> str | None:
    try:
        return path.read_text()
    except FileNotFoundError:
        return None
