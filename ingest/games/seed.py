"""The games seed lists the games: read ``seeds/games.csv`` and refuse it unless every line is valid.

Slugs end up in table names and SQL literals, so a slug that is not a plain identifier is
refused here, naming the seed line, before any file is written or any SQL runs.
"""

from __future__ import annotations

import csv
from dataclasses import dataclass
from pathlib import Path

from ingest.core.errors import ConfigError
from ingest.core.identifiers import SLUG_RULE, slug_problem

SEED = Path("seeds") / "games.csv"
REQUIRED_COLUMNS = ("game_slug", "display_name", "is_active")


class GamesSeedError(ConfigError):
    """seeds/games.csv is not a valid games seed: the message names every bad line."""


@dataclass(frozen=True)
class Game:
    """One row of the games seed, as far as model generation needs it."""

    slug: str
    display_name: str
    is_active: bool
    studio: str
    line: int


def _parse_bool(value: str) -> bool | None:
    return {"true": True, "false": False}.get(value.strip().lower())


def read_games(csv_path: Path) -> list[Game]:
    """The games of the seed, in file order. Raises GamesSeedError naming every bad line."""
    try:
        text = csv_path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as err:
        raise GamesSeedError(f"{csv_path}: cannot read the games seed: {err}") from err
    reader = csv.DictReader(text.splitlines())
    missing = [c for c in REQUIRED_COLUMNS if c not in (reader.fieldnames or [])]
    if missing:
        raise GamesSeedError(f"{csv_path}: missing column(s) {', '.join(missing)} in the header line")
    games: list[Game] = []
    problems: list[str] = []
    first_line: dict[str, int] = {}
    for line, row in enumerate(reader, start=2):
        slug = row["game_slug"] or ""
        where = f"{csv_path} line {line} (game_slug {slug!r})"
        if problem := slug_problem(slug):
            problems.append(f"{where}: not a safe identifier: {problem}")
            continue
        if slug in first_line:
            problems.append(f"{where}: duplicate: line {first_line[slug]} already defines {slug!r}")
            continue
        first_line[slug] = line
        is_active = _parse_bool(row["is_active"] or "")
        if is_active is None:
            problems.append(f"{where}: is_active is {row['is_active']!r}, expected true or false")
            continue
        if not (row["display_name"] or "").strip():
            problems.append(f"{where}: display_name is empty")
            continue
        studio = (row.get("studio") or "").strip()
        games.append(Game(slug, row["display_name"].strip(), is_active, studio, line))
    if problems:
        raise GamesSeedError(
            "the games seed is not valid; nothing was generated:\n  "
            + "\n  ".join(problems)
            + f"\n({SLUG_RULE})"
        )
    return games
