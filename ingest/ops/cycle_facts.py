"""What a refresh cycle hands its second dbt invocation: facts read once for all the games it
builds, which each model would otherwise ask Spark for, one query and often one Spark job each.

* ``spark.gamelake.slice_facts``: the slice's bounds row, each game's event dates after its
  planned mark, the active games (``SliceReaders.handed``, ingest/ops/refresh_selection.py);
* ``spark.gamelake.gold_marks``: the gold marks of the games built, read from gold's files with
  delta-rs (ingest/ops/gold_marks.py);
* ``spark.gamelake.gold_versions``: the Delta versions of those gold tables, read at the same
  time: daily_active reads player_agg as it stood before the build (gold_daily_active.sql);
* ``spark.gamelake.daily_active_batches``: whether a daily_active build can meet a late player
  (ingest/ops/daily_active_batches.py), read again for a gold step of its own, after silver's.

They are handed only while the cycle holds dbt's build lock, which every writer of silver and
gold takes: a gold mark read before another build's commit would be behind it, and gold would
count those silver rows twice. They are cleared when the invocation ends, so no later build in
the session reads them. A build that is handed nothing asks Spark, as one from a shell does.
"""

from __future__ import annotations

import contextlib
import json
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

from ingest.landing.delta.table_location import TableLocation
from ingest.ops.bronze_watch import VERSIONS_CONF
from ingest.ops.daily_active_batches import daily_active_batches
from ingest.ops.gold_marks import GoldReader, gold_readers, handed_marks
from ingest.ops.refresh_selection import SliceReaders

GOLD_MARKS_CONF = "spark.gamelake.gold_marks"
GOLD_VERSIONS_CONF = "spark.gamelake.gold_versions"
SLICE_FACTS_CONF = "spark.gamelake.slice_facts"
DAILY_ACTIVE_BATCHES_CONF = "spark.gamelake.daily_active_batches"
HANDED_CONFS = (GOLD_MARKS_CONF, GOLD_VERSIONS_CONF, SLICE_FACTS_CONF, DAILY_ACTIVE_BATCHES_CONF)
NONE_HANDED = "{}"


def cycle_facts(
    tables_dir: Path | TableLocation, readers: SliceReaders, golds: list[GoldReader], table_versions: str
) -> dict[str, str]:
    """Each conf's JSON for the games ``readers`` says the cycle builds, whose gold tables are
    ``golds``; ``table_versions`` is what the build is handed as spark.gamelake.table_versions."""
    return {
        GOLD_MARKS_CONF: json.dumps(handed_marks(golds)),
        GOLD_VERSIONS_CONF: json.dumps({gold.name: gold.table.version() for gold in golds}),
        SLICE_FACTS_CONF: readers.handed(),
        DAILY_ACTIVE_BATCHES_CONF: _batches(tables_dir, golds, table_versions),
    }


@contextlib.contextmanager
def handing_cycle_facts(
    spark: Any, tables_dir: Path | TableLocation, readers: SliceReaders, lock_held: bool
) -> Iterator[Callable[[], None]]:
    """Hand the facts to the builds inside when the caller holds the build lock; cleared after.
    Yields what hands a gold step of its own the daily_active batches of silver as committed."""
    games = readers.games_to_build() if lock_held else []
    golds = [gold for slug in games for gold in gold_readers(tables_dir, slug)]
    handed = cycle_facts(tables_dir, readers, golds, _handed(spark, VERSIONS_CONF)) if lock_held else {}
    for conf in HANDED_CONFS:
        spark.conf.set(conf, handed.get(conf, NONE_HANDED))

    def hand_gold_step() -> None:
        if lock_held:
            batches = _batches(tables_dir, golds, _handed(spark, VERSIONS_CONF))
            spark.conf.set(DAILY_ACTIVE_BATCHES_CONF, batches)

    try:
        yield hand_gold_step
    finally:
        for conf in HANDED_CONFS:
            spark.conf.set(conf, NONE_HANDED)


def _batches(tables_dir: Path | TableLocation, golds: list[GoldReader], table_versions: str) -> str:
    return json.dumps(daily_active_batches(tables_dir, golds, json.loads(table_versions or NONE_HANDED)))


def _handed(spark: Any, conf: str) -> str:
    return str(spark.conf.get(conf, NONE_HANDED))
