"""Which models a refresh cycle builds: the games whose silver has rows to read in the slice.

A cycle builds the slice (``stg_bronze__new_events``) first. Its bounds row carries the mark
each reader was planned from (``slice_reader_marks``). A game whose slice rows are all at or
before its mark, or that has none, has nothing to read: its silver and gold are not built, and
the next slice counts it as read up to this one's upper bound (macros/medallion/bronze_slice.sql).
A reader the slice has no mark for (a new game, a stale mark) is always built.

The same look gives what each silver model would otherwise ask Spark for, one query each: the
slice's bounds row, the event dates of its game's rows after its planned mark (the partitions
its anti-join reads) and their earliest and latest event times (the files of those partitions it
reads), and whether its game is active. ``SliceReaders.handed`` hands them to the
cycle's second invocation (``spark.gamelake.slice_facts``, macros/medallion/bronze_marks.sql).
"""

from __future__ import annotations

import contextlib
import json
from collections.abc import Callable
from contextlib import AbstractContextManager
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
# the all-games silver check: every cycle runs it on the games it builds
SILVER_CHECK = "assert_silver_new_rows_valid"
_LEFT_TO_DBT_BUILD = ("--exclude", SLICE_MODEL, "tag:audit", GOLD_CHECK)
_WENT_THROUGH = {"success", "pass", "warn", "no-op"}  # dbt's node statuses that stop nothing


@dataclass(frozen=True)
class SliceReaders:
    """What the slice says about its readers: planned marks, and its newest version per game."""

    marks: dict[str, int]  # reader table -> the bronze version it had read when the slice was planned
    newest: dict[str, int]  # game slug (ANY_GAME: any row) -> the newest bronze version in the slice
    active_games: list[str]
    to_version: int = -1  # the slice's upper bound
    bounds: list[Any] | None = None  # the bounds row: from, to, built at, reader marks (JSON)
    dates: dict[str, dict[str, int]] = field(default_factory=dict)  # game -> event date -> newest version
    # game -> bronze version -> its earliest and latest event times, as Spark renders them
    event_times: dict[str, dict[int, tuple[str, str]]] = field(default_factory=dict)

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
                "event_at": self._event_times_after(game, mark),
            }
            for reader, mark in self.marks.items()
            if (game := _game_of(reader)) != ANY_GAME
        }
        facts = {"active": self.active_games, "dates": dates}
        return json.dumps(facts if self.bounds is None else {**facts, "bounds": self.bounds})

    def _event_times_after(self, game: str, mark: int) -> list[str] | None:
        """The earliest and latest event time of ``game``'s rows after ``mark``; None when it has
        none with a time. Spark renders them zero-padded, so the strings order as the times do."""
        after = [times for version, times in self.event_times.get(game, {}).items() if version > mark]
        if not after:
            return None
        return [min(first for first, _ in after), max(last for _, last in after)]

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
    event_times: dict[str, dict[int, tuple[str, str]]] = {}
    rows = spark.sql(
        f"select game_slug, cast(event_date as string), bronze_version, {_TIME % 'min'}, {_TIME % 'max'}"
        f" from {SLICE} where bronze_version is not null group by game_slug, event_date, bronze_version"
    ).collect()
    for game, date, version, first_at, last_at in rows:
        newest[ANY_GAME] = max(newest[ANY_GAME], int(version))
        if game is None:
            continue
        newest[game] = max(newest.get(game, -1), int(version))
        if date is not None:
            dates.setdefault(game, {})[date] = max(dates.get(game, {}).get(date, -1), int(version))
        if first_at is not None:
            _widen(event_times.setdefault(game, {}), int(version), (first_at, last_at))
    seeded = spark.sql(f"select game_slug from {SEED} where is_active").collect()
    active = [validate_slug(row[0], source=SEED) for row in seeded]
    return SliceReaders(marks, newest, sorted(active), bounds=bounds, dates=dates, event_times=event_times)


# an event time as the anti-join's literal takes it back, in the session's time zone (silver_game_events.sql)
_TIME = "date_format(%s(event_at), 'yyyy-MM-dd HH:mm:ss.SSSSSS')"


def _widen(times: dict[int, tuple[str, str]], version: int, span: tuple[str, str]) -> None:
    known = times.get(version)
    times[version] = span if known is None else (min(known[0], span[0]), max(known[1], span[1]))


def build_selection(readers: SliceReaders) -> list[str]:
    """dbt --select arguments for the models after the slice; empty when nothing has rows."""
    selection = [f"silver_{game}+" for game in readers.games_to_build()]
    if readers.quarantine_to_build():
        selection.append(f"{QUARANTINE}+")
    return selection


def after_slice_args(selection: list[str]) -> list[str]:
    """``dbt build`` arguments for a cycle's second step in one invocation: the selection, not the
    slice again, not the whole-table audit, and not the whole-gold check, which reads every built
    gold table's new snapshot; gold's MERGE guards its key instead (doc/DESIGN.md)."""
    return ["build", "--select", *selection, *_LEFT_TO_DBT_BUILD]


def silver_step_args(selection: list[str], threads: int = 1) -> list[str]:
    """The second step's first half: the bronze readers of the selection and their checks, on
    one thread, or on ``threads`` when each has a Spark session of its own (a reader's mark is a
    conf of its session: macros/medallion/session_threads.sql, ingest/ops/thread_sessions.py).
    The silver check is named: its parents are every game's silver, so the project's indirect
    selection (``buildable``) would leave it out of any cycle that builds fewer than all games."""
    readers = [chosen.removesuffix("+") for chosen in selection]
    check = [SILVER_CHECK] if any(reader != QUARANTINE for reader in readers) else []
    return ["build", "--select", *readers, *check, *_LEFT_TO_DBT_BUILD, "--threads", str(threads)]


def gold_step_args(selection: list[str], threads: int, stopped: tuple[str, ...] = ()) -> list[str]:
    """The second half: gold below the selected games' silver, on ``threads`` threads, but not
    below a ``stopped`` model of the first half (as one ``dbt build`` would skip it); empty when no
    game is left. Tests are taken only when all their parents are gold of this step
    (``cautious``), so the silver check the first half ran is not run again."""
    games = [
        chosen
        for chosen in selection
        if chosen != f"{QUARANTINE}+" and chosen.removesuffix("+") not in stopped
    ]
    if not games:
        return []
    gold = [f"{game},path:models/gold" for game in games]
    return [
        "build",
        "--select",
        *gold,
        *_LEFT_TO_DBT_BUILD,
        "--indirect-selection",
        "cautious",
        "--threads",
        str(threads),
    ]


def build_after_slice(
    invoke: Callable[..., Any],
    selection: list[str],
    extra: list[str],
    gold_threads: int,
    before_gold: Callable[[], None],
    silver_threads: int = 1,
    silver_sessions: Callable[[], AbstractContextManager[Any]] = contextlib.nullcontext,
) -> bool:
    """A cycle's second step; ``invoke(*args)`` runs dbt and returns its ``dbtRunnerResult``. With
    one gold thread, one invocation; with more, silver on ``silver_threads`` inside
    ``silver_sessions()`` (more than one thread only where that gives each a Spark session of
    its own: ingest/ops/thread_sessions.py), then gold on ``gold_threads`` (a gold model waits
    on Spark's driver half its time, when another model's jobs can run:
    bench/results/gold_threads.md). ``before_gold`` hands the gold step silver's
    new Delta versions: gold reads silver as of the version it is handed, and the gold step
    builds no silver that would tell it to read one further (gamelake_table_version). Whether
    every node went through."""
    if gold_threads <= 1:
        return bool(invoke(*after_slice_args(selection), *extra).success)
    with silver_sessions():
        silver = invoke(*silver_step_args(selection, silver_threads), *extra)
    if silver.result is None or silver.exception is not None:
        return False  # stopped before any node ran: a parse error, the lock refused
    gold = gold_step_args(selection, gold_threads, failed_in(silver.result.results))
    if gold:
        before_gold()
    gold_ok = not gold or bool(invoke(*gold, *extra).success)
    return bool(silver.success) and gold_ok


def failed_in(results: Any) -> tuple[str, ...]:
    """The models a failed node of dbt's ``results`` stops: a model that did not build, and the
    parents of a test that did not pass (``dbt build`` skips what is below either; a node it
    skipped stops what is below it too)."""
    stopped: list[str] = []
    for result in results or ():
        if str(result.status) in _WENT_THROUGH:
            continue
        node = result.node
        if node.resource_type == "test":
            stopped += [
                parent.rsplit(".", 1)[-1] for parent in node.depends_on.nodes if parent.startswith("model.")
            ]
        else:
            stopped.append(node.name)
    return tuple(dict.fromkeys(stopped))
