"""Which days of a daily_active build's batch can meet a late player, told before it runs.

``gold_<game>_daily_active`` adds to a day's distinct counts the players new to it, judged from
player_agg as it stood before the cycle (macros/medallion/gold_daily_active.sql). A player whose
stored last event falls on a later day than a batch row's is late: that day must be recounted from
silver, a branch of the statement that costs Spark work growing with the day even when it recounts
nothing (bench/results/day_partition_reads.md). No player can be late on a day on or after the
latest day player_agg holds; on an earlier day one can. So the refresh hands each daily_active
table what its build needs to add the first kind of day and recount the second, with no query:

* ``silver_to``/``dates``: the silver version its batch ends at, and the ``event_date`` partition
  values of silver's commits after its mark up to it, from the commit files (no row read; a
  compaction's files, which bring no rows, are left out);
* ``last_rows``: the last of those commits that brought rows, the mark a recounted day stores
  (the largest ``silver_version`` its batch's rows hold, as player_agg's mark is);
* ``players_through``: the latest UTC day of player_agg's ``last_event_at`` and
  ``last_purchase_at``, from its file statistics (its columns when a file has none);
* ``late``: when the batch has days before ``players_through``, the days of those on which one of
  the batch's players is late (its stored last event on a later day), judged player by player
  from silver's change feed and player_agg's rows. One player whose console clock runs ahead
  moves ``players_through`` past today; judged by that day alone, every batch of today would be
  recounted from silver's partition for the day until midnight passes it.

Anything not known (a commit file cleaned up, a file without the partition value, an empty
player_agg) hands nothing for that table, and its build recounts every day of its batch.
"""

from __future__ import annotations

import datetime as dt
import json
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc
from deltalake import DeltaTable
from deltalake.exceptions import DeltaError

from ingest.games.layout import silver_table
from ingest.landing.delta.log_folder import log_folder
from ingest.landing.delta.table_location import TableLocation, as_location
from ingest.landing.delta.table_scan import scan
from ingest.ops.gold_marks import GoldReader

PLAYER_TIMES = ("last_event_at", "last_purchase_at")
DATE_PARTITION = "event_date"


def daily_active_batches(
    tables_dir: Path | TableLocation, golds: list[GoldReader], silver_versions: dict[str, int]
) -> dict[str, dict[str, Any]]:
    """What each daily_active table of ``golds`` is handed, by ``schema.table``, for a batch ending
    at silver's version in ``silver_versions`` (by ``schema.table``, as the build reads it)."""
    by_game: dict[str, dict[str, GoldReader]] = {}
    for gold in golds:
        by_game.setdefault(gold.game, {})[gold.kind] = gold
    handed = {}
    for slug, kinds in by_game.items():
        daily, players = kinds.get("daily_active"), kinds.get("player_agg")
        silver_to = silver_versions.get(f"silver.{silver_table(slug)}")
        if daily is None or players is None or daily.mark is None or silver_to is None:
            continue
        silver = as_location(tables_dir).child(f"silver.db/{silver_table(slug)}")
        committed = rows_committed(silver, daily.mark, silver_to)
        through = players_through(players.table)
        if committed is None or through is None:
            continue
        handed[daily.name] = {"silver_to": silver_to, **committed, "players_through": through}
        before = [date for date in committed["dates"] if date < through]
        if before:
            late = late_days(silver.delta_table(), daily.mark, silver_to, players.table, before)
            if late is not None:
                handed[daily.name]["late"] = late
    return handed


def rows_committed(table: Path | TableLocation, after: int, upto: int) -> dict[str, Any] | None:
    """``dates``: the sorted ``event_date`` values of the files that brought rows in versions
    ``after`` + 1 to ``upto``, and ``last_rows``: the last of those versions (None: none did).
    None when a commit file is gone or such a file has no partition value."""
    folder = log_folder(table)
    dates: set[str] = set()
    last_rows = None
    for version in range(after + 1, upto + 1):
        text = folder.read_text(f"{version:020d}.json")
        if text is None:
            return None
        for line in text.splitlines():
            added = _rows_added(json.loads(line)) if line.strip() else None
            if added is None:
                continue
            date = (added.get("partitionValues") or {}).get(DATE_PARTITION)
            if not date:
                return None
            dates.add(date)
            last_rows = version
    return {"dates": sorted(dates), "last_rows": last_rows}


def _rows_added(action: dict[str, Any]) -> dict[str, Any] | None:
    """The file of a commit action that brings rows: a change-data file, or an added file that
    changes data (a compaction's does not)."""
    if "cdc" in action:
        return dict(action["cdc"])
    if "add" in action and action["add"].get("dataChange", True):
        return dict(action["add"])
    return None


def late_days(
    silver: DeltaTable, after: int, upto: int, players: DeltaTable, days: list[str]
) -> list[str] | None:
    """The days of ``days`` on which a player of the rows silver inserted in versions ``after`` + 1
    to ``upto`` is late: its stored last event (last purchase) in ``players`` falls on a later
    UTC day. None when the change feed cannot be read (storage, a column silver lacks). delta-rs
    passes over a commit file that is gone, so the caller reads them all first (rows_committed)."""
    try:
        feed = silver.load_cdf(after + 1, upto, columns=["gamer_id", DATE_PARTITION, "_change_type"])
        batch = pa.table(feed)
    except (DeltaError, OSError):  # the build then recounts every day before players_through
        return None
    # DataFusion hands strings back as views, which pyarrow's kernels do not all take
    pairs = pa.table(
        {
            "gamer_id": batch.column("gamer_id").cast(pa.string()),
            "day": batch.column(DATE_PARTITION),
            "change": batch.column("_change_type").cast(pa.string()),
        }
    )
    candidates = pa.array([dt.date.fromisoformat(day) for day in days], pa.date32())
    on_days = pc.is_in(pairs.column("day"), value_set=candidates)
    pairs = pairs.filter(pc.and_(pc.equal(pairs.column("change"), "insert"), on_days))
    if pairs.num_rows == 0:
        return []
    stored = _stored_days(players)
    joined = pairs.join(stored, "gamer_id", join_type="inner")
    late = joined.filter(pc.greater(joined.column("stored_day"), joined.column("day")))
    return sorted({day.isoformat() for day in pc.unique(late.column("day")).to_pylist()})


def _stored_days(players: DeltaTable) -> pa.Table:
    """Each player's latest UTC day of its stored times: ``gamer_id``, ``stored_day``."""
    held = [name for name in PLAYER_TIMES if name in players.schema().to_arrow().names]
    rows = scan(players, ["gamer_id", *held])
    days = [_utc_dates(rows.column(name)) for name in held]
    latest = days[0] if len(days) == 1 else pc.max_element_wise(*days, skip_nulls=True)
    return pa.table({"gamer_id": rows.column("gamer_id").cast(pa.string()), "stored_day": latest})


def _utc_dates(times: pa.ChunkedArray) -> pa.ChunkedArray:
    """The UTC dates of timestamps, whatever their time zone (event_date is bronze's UTC date): an
    instant's value counts from the epoch in UTC, which dropping the zone keeps."""
    return pc.cast(pc.cast(times, pa.timestamp("us")), pa.date32())


def players_through(table: DeltaTable) -> str | None:
    """The latest UTC day of ``table``'s player times as ``YYYY-MM-DD``; None when it holds none."""
    held = [name for name in PLAYER_TIMES if name in table.schema().to_arrow().names]
    if PLAYER_TIMES[0] not in held:
        return None  # not a player_agg this code knows
    latest = _latest_from_stats(table, held)
    if latest is None:
        rows = scan(table, held)
        found = [pc.max(rows.column(name)).as_py() for name in held]
        latest = max((at for at in found if at is not None), default=None)
    return None if latest is None else _utc_day(latest)


def _latest_from_stats(table: DeltaTable, columns: list[str]) -> dt.datetime | None:
    """The largest of the files' max statistics; None when a file lacks one it needs. A stat is
    truncated to the millisecond, which never moves a time across midnight."""
    files = pa.table(table.get_add_actions(flatten=True))
    if files.num_rows == 0:
        return None
    latest = []
    for name in columns:
        maxima, nulls = f"max.{name}", f"null_count.{name}"
        if maxima not in files.column_names or nulls not in files.column_names:
            return None
        records = files.column("num_records")
        unknown = pc.and_(pc.is_null(files.column(maxima)), pc.less(files.column(nulls), records))
        if pc.any(pc.fill_null(unknown, True)).as_py():
            return None  # a file with values and no statistic for them
        latest.append(pc.max(files.column(maxima)).as_py())
    return max((at for at in latest if at is not None), default=None)


def _utc_day(at: dt.datetime) -> str:
    if at.tzinfo is not None:
        at = at.astimezone(dt.UTC)
    return at.date().isoformat()
