"""What a refresh cycle hands its second dbt invocation: facts read once for all the games it
builds, which each model would otherwise ask Spark for, one query and often one Spark job each.

* ``spark.gamelake.slice_facts``: the slice's bounds row, each game's event dates after its
  planned mark, the active games (``SliceReaders.handed``, ingest/ops/refresh_selection.py);
* ``spark.gamelake.gold_marks``: the gold marks of the games built, read from gold's files with
  delta-rs (ingest/ops/gold_marks.py);
* ``spark.gamelake.gold_versions``: the Delta versions of those gold tables, read at the same
  time: daily_active reads player_agg as it stood before the build (gold_daily_active.sql).

They are handed only while the cycle holds dbt's build lock, which every writer of silver and
gold takes: a gold mark read before another build's commit would be behind it, and gold would
count those silver rows twice. They are cleared when the invocation ends, so no later build in
the session reads them. A build that is handed nothing asks Spark, as one from a shell does.
"""

from __future__ import annotations

import contextlib
import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from ingest.landing.delta.table_location import TableLocation
from ingest.ops.gold_marks import gold_readers, handed_marks
from ingest.ops.refresh_selection import SliceReaders

GOLD_MARKS_CONF = "spark.gamelake.gold_marks"
GOLD_VERSIONS_CONF = "spark.gamelake.gold_versions"
SLICE_FACTS_CONF = "spark.gamelake.slice_facts"
HANDED_CONFS = (GOLD_MARKS_CONF, GOLD_VERSIONS_CONF, SLICE_FACTS_CONF)
NONE_HANDED = "{}"


def cycle_facts(tables_dir: Path | TableLocation, readers: SliceReaders) -> dict[str, str]:
    """Each conf's JSON for the games ``readers`` says the cycle builds."""
    golds = [gold for slug in readers.games_to_build() for gold in gold_readers(tables_dir, slug)]
    return {
        GOLD_MARKS_CONF: json.dumps(handed_marks(golds)),
        GOLD_VERSIONS_CONF: json.dumps({gold.name: gold.table.version() for gold in golds}),
        SLICE_FACTS_CONF: readers.handed(),
    }


@contextlib.contextmanager
def handing_cycle_facts(
    spark: Any, tables_dir: Path | TableLocation, readers: SliceReaders, lock_held: bool
) -> Iterator[None]:
    """Hand the facts to the builds inside when the caller holds the build lock; cleared after."""
    handed = cycle_facts(tables_dir, readers) if lock_held else {}
    for conf in HANDED_CONFS:
        spark.conf.set(conf, handed.get(conf, NONE_HANDED))
    try:
        yield
    finally:
        for conf in HANDED_CONFS:
            spark.conf.set(conf, NONE_HANDED)
