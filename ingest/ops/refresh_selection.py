"""Which models a refresh cycle builds: the games whose silver has rows to read in the slice.

A cycle builds the slice (``stg_bronze__new_events``) first. Its bounds row carries the mark
each reader was planned from (``slice_reader_marks``). A game whose slice rows are all at or
before its mark, or that has none, has nothing to read: its silver and gold are not built, and
the next slice counts it as read up to this one's upper bound (macros/medallion/bronze_slice.sql).
A reader the slice has no mark for (a new game, a stale mark) is always built.

The same look gives what each silver model would otherwise ask Spark for, one query each: the
slice's bounds row, the event dates of its game's rows after its planned mark (the partitions
its anti-join reads), and whether its game is active. ``SliceReaders.handed`` hands them to the
cycle's second invocation (``spark.gamelake.slice_facts``, macros/medallion/bronze_marks.sql).
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any

from ingest.core.identifiers import validate_slug

SLICE_MODEL = "stg_bronze__new_events"
SLICE = f"bronze.{SLICE_MODEL}"
SEED = "reference.games"
QUARANTINE = "silver_quarantine"
ANY_GAME = "*"
# the all-games gold check; the refresh leaves it to dbt build and dbt test
GOLD_CHECK = "assert_gold_rows_valid"


@dataclass(frozen=True)
class SliceReaders:
    """What the slice says about its readers: planned marks, and its newest version per game."""

    marks: dict[str, int]  # reader table -> the bronze version it had read when the slice was planned
    newest: dict[str, int]  # game slug (ANY_GAME: any row) -> the newest bronze version in the slice
    active_games: list[str]
    to_version: int = -1  # the slice's upper bound
    bounds: list[Any] | None = None  # the bounds row: from, to, built at, reader marks (JSON)
    dates: dict[str, dict[str, int]] = field(default_factory=dict)  # game -> event date -> newest version

    def carried(self) -> dict[str, int]:
        """Each planned reader's mark once the slice is read: its upper bound for a reader with no
        rows in it after its mark (it is not built), else the mark it was planned from."""
        return {
            reader: mark if self._has_rows(reader, _game_of(reader)) else max(mark, self.to_version)
            for reader, mark in self.marks.items()
        }

    def games_to_build(self) -> list[str]:
        return [game for game in self.active_games if self._has_rows(f"silver_{game}", game)]

    def quarantine_to_build(self) -> bool:
        return self._has_rows(QUARANTINE, ANY_GAME)

    def handed(self) -> str:
        """The facts silver's models read, as JSON: the bounds row, and each planned game's event
        dates after its mark, named with that mark (a model planned from another asks Spark)."""
        dates = {
            game: {
                "mark": mark,
                "dates": sorted(d for d, newest in self.dates.get(game, {}).items() if newest > mark),
            }
            for reader, mark in self.marks.items()
            if (game := _game_of(reader)) != ANY_GAME
        }
        facts = {"active": self.active_games, "dates": dates}
        return json.dumps(facts if self.bounds is None else {**facts, "bounds": self.bounds})

    def _has_rows(self, reader: str, game: str) -> bool:
        mark = self.marks.get(reader)
        return mark is None or self.newest.get(game, -1) > mark


def _game_of(reader: str) -> str:
    return ANY_GAME if reader == QUARANTINE else reader.removeprefix("silver_")


def read_slice_readers(spark: Any) -> SliceReaders:
    """One look at the slice and the seed, in the refresh's Spark session."""
    found = spark.sql(
        "select slice_from_version, slice_to_version, date_format(slice_built_at, 'yyyy-MM-dd HH:mm:ss'),"
        f" slice_reader_marks from {SLICE} where bronze_version is null"
    ).collect()
    bounds = list(found[0]) if len(found) == 1 else None  # else the models name the broken slice
    marks = {str(k): int(v) for k, v in json.loads((bounds[3] if bounds else None) or "{}").items()}
    newest: dict[str, int] = {ANY_GAME: -1}
    dates: dict[str, dict[str, int]] = {}
    rows = spark.sql(
        f"select game_slug, cast(event_date as string), max(bronze_version) from {SLICE}"
        " where bronze_version is not null group by game_slug, event_date"
    ).collect()
    for game, date, version in rows:
        newest[ANY_GAME] = max(newest[ANY_GAME], int(version))
        if game is not None:
            newest[game] = max(newest.get(game, -1), int(version))
            if date is not None:
                dates.setdefault(game, {})[date] = int(version)
    seeded = spark.sql(f"select game_slug from {SEED} where is_active").collect()
    active = [validate_slug(row[0], source=SEED) for row in seeded]
    return SliceReaders(marks, newest, sorted(active), bounds=bounds, dates=dates)


def build_selection(readers: SliceReaders) -> list[str]:
    """dbt --select arguments for the models after the slice; empty when nothing has rows."""
    selection = [f"silver_{game}+" for game in readers.games_to_build()]
    if readers.quarantine_to_build():
        selection.append(f"{QUARANTINE}+")
    return selection


def after_slice_args(selection: list[str]) -> list[str]:
    """``dbt build`` arguments for a cycle's second step: the selection, not the slice again, not
    the whole-table audit, and not the whole-gold check, which reads every built gold table's new
    snapshot; gold's MERGE guards its key instead (doc/DESIGN.md)."""
    return ["build", "--select", *selection, "--exclude", SLICE_MODEL, "tag:audit", GOLD_CHECK]
