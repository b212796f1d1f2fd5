"""Silver and gold per game and the quarantine, from their Delta logs: rows, marks and freshness.

Silver's mark is the bronze version it has read up to, carried by its data commits (or kept as a
table property, ingest/ops/bronze_marks.py); silver_quarantine keeps one too. A reader the latest
bronze slice held no rows for has read up to that slice without a build: the later of the two
counts (slice_marks.py). Gold's mark is the
largest silver_version in its rows (macros/medallion/silver_changes.sql); a game's gold is as
far behind as the slower of its two tables. Each trails the layer before it by the age of the
first commit after its mark that added rows (delta_commits.py). Paused games are listed too.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import pyarrow.compute as pc
from deltalake import DeltaTable

from ingest.core.settings.ingest_settings import IngestSettings
from ingest.games.layout import GOLD_KINDS, gold_table, silver_table
from ingest.games.seed import Game
from ingest.landing.delta.table_scan import scan
from ingest.ops.bronze_marks import bronze_mark
from ingest.ops.gold_marks import silver_version_mark
from ingest.ops.refresh_selection import SLICE_MODEL
from ingest.ops.status.delta_commits import History, Trail, read_history
from ingest.ops.status.slice_marks import carried_marks
from ingest.ops.status.tables import describe, last_commit_s, open_table
from ingest.ops.status.time_text import iso_utc

QUARANTINE = "silver_quarantine"
SILVER_SCHEMA = "silver"
NO_GAME = "(none)"  # a quarantined row without a game_slug


@dataclass(frozen=True)
class Readers:
    """Bronze's readers: silver table name -> the table (None when not built), and its mark."""

    tables: dict[str, DeltaTable | None]
    marks: dict[str, int | None]

    def __getitem__(self, name: str) -> DeltaTable | None:
        return self.tables[name]


def _slowest(marks: list[int | None]) -> int | None:
    """The mark of the reader furthest behind; None (has read nothing) wins."""
    return None if None in marks else min(m for m in marks if m is not None)


def _with_trail(record: dict[str, Any], trail: Trail | None) -> dict[str, Any]:
    # max: a writer's clock a little ahead of ours is no reason to print a negative age
    record["freshness_s"] = None if trail is None else round(max(0.0, trail.seconds), 1)
    record["freshness_exact"] = None if trail is None else trail.exact
    return record


def bronze_readers(settings: IngestSettings, games: list[Game]) -> Readers:
    names = [silver_table(game.slug) for game in games] + [QUARANTINE]
    tables = {name: open_table(settings.dbt_table_path(SILVER_SCHEMA, name)) for name in names}
    carried = carried_marks(open_table(settings.dbt_table_path("bronze", SLICE_MODEL)))
    marks = {name: _mark(table, name, carried.get(name)) for name, table in tables.items()}
    return Readers(tables, marks)


def _mark(table: DeltaTable | None, name: str, carried: int | None) -> int | None:
    committed = bronze_mark(table, f"{SILVER_SCHEMA}.{name}") if table is not None else None
    own = committed.version if committed is not None else None
    known = [m for m in (own, carried) if m is not None]
    return max(known) if table is not None and known else None


def bronze_history(bronze: DeltaTable | None, readers: Readers) -> History | None:
    """Bronze's commits after the slowest reader's mark: one read of the log serves every reader."""
    marks = [readers.marks[name] for name, table in readers.tables.items() if table is not None]
    return read_history(bronze, _slowest(marks)) if bronze is not None and marks else None


def _reader(
    settings: IngestSettings, name: str, readers: Readers, history: History | None, now: float
) -> dict[str, Any]:
    table, mark = readers[name], readers.marks[name]
    record = {**describe(settings.dbt_table_path(SILVER_SCHEMA, name), table), "bronze_version": mark}
    return _with_trail(record, history.trail(mark, now) if table is not None and history else None)


def quarantine(
    settings: IngestSettings, readers: Readers, history: History | None, now: float
) -> dict[str, Any]:
    """silver_quarantine as a bronze reader, plus its rows by game."""
    table = readers[QUARANTINE]
    record = _reader(settings, QUARANTINE, readers, history, now)
    by_game: dict[str, int] = {}
    if table is not None and record["rows"]:
        slugs = scan(table, ["game_slug"]).column(0)
        counts = pc.value_counts(slugs).to_pylist()
        by_game = {c["values"] if c["values"] is not None else NO_GAME: c["counts"] for c in counts}
    record["by_game"] = by_game
    return record


def silver(
    settings: IngestSettings,
    games: list[Game],
    readers: Readers,
    history: History | None,
    quarantined: dict[str, int],
    now: float,
) -> dict[str, dict[str, Any]]:
    """Silver per game: rows, mark, freshness behind bronze, and the share of its rows quarantined."""
    out = {}
    for game in games:
        name = silver_table(game.slug)
        record = _reader(settings, name, readers, history, now)
        held = quarantined.get(game.slug, 0)
        total = record["rows"] + held
        ratio = held / total if total else 0.0
        out[game.slug] = {
            **record,
            "active": game.is_active,
            "quarantine_rows": held,
            "quarantine_ratio": ratio,
        }
    return out


def _gold_game(
    settings: IngestSettings, game: Game, game_silver: DeltaTable | None, now: float
) -> dict[str, Any]:
    paths = {kind: settings.dbt_table_path("gold", gold_table(game.slug, kind)) for kind in GOLD_KINDS}
    tables = {kind: open_table(path) for kind, path in paths.items()}
    built = [table for table in tables.values() if table is not None]
    exists = len(built) == len(GOLD_KINDS)
    mark = _slowest([silver_version_mark(table) for table in built]) if exists else None
    trail = read_history(game_silver, mark).trail(mark, now) if exists and game_silver else None
    record = {
        "active": game.is_active,
        "exists": exists,
        "silver_version": mark,
        "last_commit_at": iso_utc(max((last_commit_s(table) for table in built), default=None)),
    }
    return {
        **_with_trail(record, trail),
        **{kind: describe(paths[kind], tables[kind]) for kind in GOLD_KINDS},
    }


def gold(
    settings: IngestSettings, games: list[Game], readers: Readers, now: float
) -> dict[str, dict[str, Any]]:
    """Gold per game: both tables, the slower one's mark and how far that trails silver."""
    return {game.slug: _gold_game(settings, game, readers[silver_table(game.slug)], now) for game in games}
