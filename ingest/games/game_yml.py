"""The per-game property files: every game's silver and gold models with their columns.

The column lists are the same for every game, so each is written once under an anchor on the
first game's model and by alias on the others; silver's list follows the bronze contract.
"""

from __future__ import annotations

from collections.abc import Sequence

from ingest.core.contract import Contract
from ingest.games.layout import FROM_BOTH, FROM_SEED
from ingest.games.seed import Game
from ingest.games.unit_tests import gold_unit_tests, silver_unit_tests
from ingest.games.yml import Columns, model_yml, shared_columns, tested

# Loaded into silver by silver_game_events, after the contract's staging columns.
SILVER_ONLY = ("bronze_version", "dq_warnings", "silver_loaded_at")
# The checks every game's tables share (unique and not-null keys, known event types, games in the
# seed) are not per-game column tests: they run once over all games, as the singular tests
# data-tests/assert_silver_new_rows_valid.sql and assert_gold_rows_valid.sql.
PLAYER_AGG_COLUMNS = (
    "game_slug gamer_id event_count session_count match_count purchase_count achievement_count "
    "level_up_count total_session_ms best_score max_level first_event_at last_event_at silver_loaded_at "
    "silver_version updated_at last_purchase_at"
)
DAILY_ACTIVE_COLUMNS = (
    "event_date game_slug active_players paying_players session_count match_count event_count "
    "silver_loaded_at silver_version updated_at"
)


def _untested(names: str | Sequence[str]) -> Columns:
    return [(name, []) for name in (names.split() if isinstance(names, str) else names)]


# The silver columns assert_silver_new_rows_valid checks: a contract without them is refused.
SILVER_CHECKED = ("event_id", "gamer_id", "event_type", "game_slug")


def _silver_columns(contract: Contract) -> Columns:
    names = [c.name for c in contract.columns] + [d.name for d in contract.derived] + list(SILVER_ONLY)
    return tested(names, dict.fromkeys(SILVER_CHECKED, ()), "silver_<game>")


def silver_yml(games: list[Game], contract: Contract) -> str:
    columns = _silver_columns(contract)
    models = "".join(
        model_yml(
            f"silver_{g.slug}",
            f"Silver events of {g.display_name} ({g.slug}). {{{{ doc('silver_game_events') }}}}",
            shared_columns("silver_columns", columns, first=i == 0),
        )
        for i, g in enumerate(games)
    )
    return _file(FROM_BOTH, models) + silver_unit_tests(games[0].slug if games else None)


def gold_yml(games: list[Game]) -> str:
    models = "".join(
        model_yml(
            f"gold_{g.slug}_player_agg",
            f"Players of {g.display_name} ({g.slug}). {{{{ doc('gold_player_agg') }}}}",
            shared_columns("player_agg_columns", _untested(PLAYER_AGG_COLUMNS), first=i == 0),
        )
        + model_yml(
            f"gold_{g.slug}_daily_active",
            f"Daily active players of {g.display_name} ({g.slug}). {{{{ doc('gold_daily_active') }}}}",
            shared_columns("daily_active_columns", _untested(DAILY_ACTIVE_COLUMNS), first=i == 0),
        )
        for i, g in enumerate(games)
    )
    return _file(FROM_SEED, models) + gold_unit_tests(games[0].slug if games else None)


def _file(marker: str, models: str) -> str:
    return f"# {marker}\nversion: 2\n\nmodels:\n{models}"
