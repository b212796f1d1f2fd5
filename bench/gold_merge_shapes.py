"""What gold's per-player write costs in other shapes: is the MERGE's time the MERGE itself?

    python -m bench.gold_merge_shapes [--game space_raiders] [--rounds 6] [--versions 3]

On the 5-game lakehouse bench.refresh_profile keeps (.cache/bench-profile/games-5, made there
first), in one warm Spark session: a copy of ``gold_<game>_player_agg`` takes the silver rows of
the last ``--versions`` silver versions (silver's change feed), ``--rounds`` times in each shape,
the shapes interleaved so the machine's drift hits them alike:

- ``merge as built``: the source joins the batch's per-gamer aggregates to the stored totals
  (macros/medallion/gold_player_agg.sql) and the MERGE updates every column (dbt's ``merge``);
- ``merge, batch-only source``: the source is the batch alone, the totals combine in ``update set``;
- ``insert overwrite``: the whole table rewritten from a full outer join of it and the batch;
- ``merge as built, deletion vectors``: the first shape on a copy with deletion vectors on;
- ``merge as built, source not materialized``: the first shape with Delta's
  ``merge.materializeSource`` set to ``none`` (the source reads fixed table versions, so it
  cannot change between the MERGE's two passes);
- ``merge, totals joined unfiltered``: the first shape without the totals' filter
  ``gamer_id in (select gamer_id from batch)``, which reads the batch a second time;
- ``merge as built, <setting>``: the first shape under one session setting each (interpreted
  expressions, no file statistics, no checksum file, one shuffle partition: ``SHAPE_CONFS``);
- ``source alone`` / ``source joined to totals`` / ``... to unfiltered totals``: ``count(*)`` of
  each source, no write;
- ``insert of 10 rows``: a plain insert into another copy, the floor of a write here.

The first round warms up and is not counted. Medians are printed and appended to
bench/results/gold_merge.md with the machine and date.
"""

from __future__ import annotations

import argparse
import statistics
import time
from collections.abc import Callable, Mapping
from typing import Any, TypeVar

from bench.incremental import _session, prepare
from bench.results_file import append_section
from ingest.core.settings.paths import PROJECT_DIR

Shape = TypeVar("Shape")  # what a round runs: a statement, or several
RESULTS = PROJECT_DIR / "bench" / "results" / "gold_merge.md"
LAKEHOUSE = PROJECT_DIR / ".cache" / "bench-profile" / "games-5"
COUNTS = ["event_count", "session_count", "match_count", "purchase_count", "achievement_count"]
COUNTS += ["level_up_count", "total_session_ms"]
COMBINED = {
    "best_score": "greatest",
    "max_level": "greatest",
    "first_event_at": "least",
    "last_event_at": "greatest",
    "silver_loaded_at": "greatest",
    "silver_version": "greatest",
}


def _batch(silver: str, first: int, last: int) -> str:
    return f"""
    select gamer_id, count(*) as event_count, count_if(event_type = 'session_start') as session_count,
        count_if(event_type = 'match_start') as match_count,
        count_if(event_type = 'purchase') as purchase_count,
        count_if(event_type = 'achievement') as achievement_count,
        count_if(event_type = 'level_up') as level_up_count,
        coalesce(sum(if(event_type = 'session_end', duration_ms, 0)), 0) as total_session_ms,
        max(score) as best_score, max(level) as max_level, min(event_at) as first_event_at,
        max(event_at) as last_event_at, max(silver_loaded_at) as silver_loaded_at,
        max(_commit_version) as silver_version
    from table_changes('{silver}', {first}, {last})
    where _change_type = 'insert'
    group by gamer_id"""


def _joined(batch: str, gold: str, game: str, filtered: bool = True) -> str:
    added = ", ".join(f"b.{c} + coalesce(p.{c}, 0) as {c}" for c in COUNTS)
    combined = ", ".join(f"{f}(b.{c}, p.{c}) as {c}" for c, f in COMBINED.items())
    totals = f"select * from {gold}" + (" where gamer_id in (select gamer_id from b)" if filtered else "")
    return f"""
    with b as ({batch}), p as ({totals})
    select '{game}' as game_slug, b.gamer_id, {added}, {combined}, current_timestamp() as updated_at
    from b left join p on b.gamer_id = p.gamer_id"""


def _shapes(game: str, batch: str) -> dict[str, str]:
    update = ", ".join(
        [f"d.{c} = d.{c} + s.{c}" for c in COUNTS]
        + [f"d.{c} = {f}(d.{c}, s.{c})" for c, f in COMBINED.items()]
        + ["d.updated_at = s.updated_at"]
    )
    outer = ", ".join(
        [f"coalesce(b.{c}, 0) + coalesce(d.{c}, 0) as {c}" for c in COUNTS]
        + [f"{f}(b.{c}, d.{c}) as {c}" for c, f in COMBINED.items()]
    )
    on = "on s.gamer_id = d.gamer_id"
    return {
        "merge as built": f"merge into gc as d using joined_gc as s {on}"
        " when matched then update set * when not matched then insert *",
        "merge, batch-only source": f"merge into gc as d using batch_only as s {on}"
        f" when matched then update set {update} when not matched then insert *",
        "insert overwrite": f"""insert overwrite gc
            select coalesce(b.game_slug, d.game_slug), coalesce(b.gamer_id, d.gamer_id), {outer},
                coalesce(b.updated_at, d.updated_at)
            from gc as d full outer join batch_only as b on b.gamer_id = d.gamer_id""",
        "merge as built, deletion vectors": f"merge into gdv as d using joined_gdv as s {on}"
        " when matched then update set * when not matched then insert *",
        "merge as built, source not materialized": f"merge into gc as d using joined_gc as s {on}"
        " when matched then update set * when not matched then insert *",
        **{
            shape: MERGE_AS_BUILT
            for shape in SHAPE_CONFS
            if shape.startswith("merge as built, ") and shape != "merge as built, source not materialized"
        },
        "merge, totals joined unfiltered": f"merge into gc as d using joined_all_gc as s {on}"
        " when matched then update set * when not matched then insert *",
        "source alone": "select count(*) from batch_only",
        "source joined to totals": "select count(*) from joined_gc",
        "source joined to unfiltered totals": "select count(*) from joined_all_gc",
        "insert of 10 rows": "insert into gi select * from batch_only limit 10",
    }


MERGE_AS_BUILT = (
    "merge into gc as d using joined_gc as s on s.gamer_id = d.gamer_id"
    " when matched then update set * when not matched then insert *"
)
SHAPE_CONFS = {
    "merge as built, source not materialized": {"spark.databricks.delta.merge.materializeSource": "none"},
    "merge as built, interpreted": {
        "spark.sql.codegen.wholeStage": "false",
        "spark.sql.codegen.factoryMode": "NO_CODEGEN",
    },
    "merge as built, no file statistics": {"spark.databricks.delta.stats.collect": "false"},
    "merge as built, no checksum file": {"spark.databricks.delta.writeChecksumFile.enabled": "false"},
    "merge as built, 1 shuffle partition": {"spark.sql.shuffle.partitions": "1"},
}


def _timed_shape(spark: Any, shape: str, sql: str) -> float:
    confs = SHAPE_CONFS.get(shape, {})
    for key, value in confs.items():
        spark.conf.set(key, value)
    started = time.perf_counter()
    spark.sql(sql).collect()
    seconds = time.perf_counter() - started
    for key in confs:
        spark.conf.unset(key)
    return seconds


def _copies(spark: Any, gold: str, game: str, batch: str) -> None:
    spark.sql(f"create or replace table gc using delta as select * from {gold}")
    spark.sql(
        "create or replace table gdv using delta tblproperties ('delta.enableDeletionVectors' = 'true')"
        f" as select * from {gold}"
    )
    spark.sql(f"create or replace table gi using delta as select * from {gold} limit 0")
    spark.sql(
        f"create or replace temporary view batch_only as select '{game}' as game_slug, b.*,"
        f" current_timestamp() as updated_at from ({batch}) as b"
    )
    for copy in ("gc", "gdv"):
        spark.sql(f"create or replace temporary view joined_{copy} as {_joined(batch, copy, game)}")
    unfiltered = _joined(batch, "gc", game, filtered=False)
    spark.sql(f"create or replace temporary view joined_all_gc as {unfiltered}")


def interleaved_rounds(
    shapes: Mapping[str, Shape], rounds: int, timed: Callable[[str, Shape], float]
) -> dict[str, list[float]]:
    """Each shape's seconds over ``rounds`` rounds, shapes interleaved; the first round not kept."""
    times: dict[str, list[float]] = {shape: [] for shape in shapes}
    for round_ in range(rounds):
        for shape, sql in shapes.items():
            seconds = timed(shape, sql)
            if round_:
                times[shape].append(seconds)
    return times


def median_table(times: dict[str, list[float]], rounds: int) -> list[str]:
    lines = [f"- {rounds - 1} rounds after a warm-up round, shapes interleaved, one warm session", ""]
    lines += ["| shape | median s | min s | max s |", "|---|---:|---:|---:|"]
    for shape, values in times.items():
        lines.append(f"| {shape} | {statistics.median(values):.2f} | {min(values):.2f} | {max(values):.2f} |")
    return lines


def open_lakehouse(silver: str) -> tuple[Any, int]:
    """A warm session on the profile's 5-game lakehouse (made when missing), and ``silver``'s version."""
    if not (LAKEHOUSE / "state.json").exists():
        prepare(LAKEHOUSE, 60_000, 5)
    spark = _session(LAKEHOUSE)
    return spark, int(spark.sql(f"describe history {silver} limit 1").first()["version"])


def run(game: str, rounds: int, versions: int) -> list[str]:
    gold, silver = f"gold.gold_{game}_player_agg", f"silver.silver_{game}"
    spark, last = open_lakehouse(silver)
    batch = _batch(silver, max(last - versions + 1, 1), last)
    batch_rows = spark.sql(f"select sum(event_count) from ({batch})").first()[0]
    gold_rows = spark.table(gold).count()
    spark.sql("use default")
    _copies(spark, gold, game, batch)
    shapes = _shapes(game, batch)
    times = interleaved_rounds(shapes, rounds, lambda shape, sql: _timed_shape(spark, shape, sql))
    for copy in ("gc", "gdv", "gi"):
        spark.sql(f"drop table {copy}")
    spark.stop()
    shown = (
        f"- `{gold}`: {gold_rows:,} gamers; a batch of {batch_rows:,} silver rows from {versions} versions"
    )
    return [shown, *median_table(times, rounds)]


def gold_bench_args(doc: str) -> argparse.Namespace:
    """``--game``, ``--rounds`` and ``--versions``, as both gold write benches take them."""
    parser = argparse.ArgumentParser(description=doc.split("\n")[0])
    parser.add_argument("--game", default="space_raiders")
    parser.add_argument("--rounds", type=int, default=6)
    parser.add_argument("--versions", type=int, default=3)
    return parser.parse_args()


def main() -> None:
    args = gold_bench_args(__doc__)
    body = run(args.game, args.rounds, args.versions)
    append_section(
        RESULTS,
        "Gold's per-player write in other shapes",
        body,
        heading="# Gold's MERGE against its rewrites\n",
    )


if __name__ == "__main__":
    main()
