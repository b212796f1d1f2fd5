"""``ingest dbt-build``: bronze -> silver -> gold with dbt, then the docs site and a short summary.

The step of ``make run`` after the ingest: check that the generated per-game models match
seeds/games.csv, ``dbt build`` on the embedded Spark (the ``local`` target; it loads the seed
first, as ``dbt seed`` would), ``dbt docs generate``, and print rows per layer and game, the top
players, and how to open the docs. dbt runs in this process with the project parsed once for
both steps (ingest/ops/warm_dbt.py), and the summary reuses its Spark session.

Two costs of a first run are left out (bench/results/first_build.md): the build lock is taken with
delta-rs for both steps, as the continuous refresh takes it, where dbt's hooks took it with a
MERGE and released it with a DELETE, each a cold Spark job; and the docs reuse the build's
compiled SQL (``--no-compile``) instead of compiling every node a second time.

The build is ``dbt build``'s nodes in two invocations, as a refresh cycle's: everything but gold
on one thread (a bronze reader's mark is a conf of the shared session), then gold and what is
below it on ``DEFAULT_GOLD_THREADS`` (bench/results/gold_threads.md). A node that fails in the
first stops what is below it in the second, as one ``dbt build`` would.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from ingest.core.errors import ConfigError, IngestError
from ingest.core.settings.paths import PROJECT_DIR
from ingest.games.model_files import sync
from ingest.games.seed import SEED, read_games
from ingest.landing.delta.table_location import TableLocation
from ingest.ops import docs_site
from ingest.ops.codegen_mode import interpreted, set_mode, table_rows
from ingest.ops.dbt_build_lock import LOCK_DDL, LOCK_HELD_VAR, LOCK_NAME, holding_build_lock, new_holder
from ingest.ops.refresh_command import DEFAULT_GOLD_THREADS
from ingest.ops.refresh_selection import failed_in
from ingest.ops.warm_dbt import WarmDbt

PROFILES_DIR = PROJECT_DIR / "profiles"
BRONZE_PATH = "spark.gamelake.bronze.path"  # where on-run-start registers bronze (session.py)
TOP_PLAYERS = 5
GOLD_AND_BELOW = "path:models/gold+"
AUDIT = "tag:audit"  # left out of a build with no --select (selectors.yml); a selection must say so


def below_silver_args() -> list[str]:
    """The first half of ``dbt build``: the seed, bronze's views and silver, with their tests."""
    return ["build", "--exclude", GOLD_AND_BELOW, AUDIT, "--threads", "1"]


def gold_args(stopped: tuple[str, ...] = (), threads: int = DEFAULT_GOLD_THREADS) -> list[str]:
    """The second half: gold and below it, every test with a parent there (``eager``), but nothing
    below a ``stopped`` node of the first half."""
    excluded = [AUDIT, *(f"{name}+" for name in stopped)]
    return ["build", "--select", GOLD_AND_BELOW, "--exclude", *excluded,
            "--indirect-selection", "eager", "--threads", str(threads)]  # fmt: skip


def _dbt(dbt: WarmDbt, *args: str) -> float:
    started = time.monotonic()
    result = dbt.invoke(*args)
    if not result.success:
        raise IngestError(f"`dbt {' '.join(args)}` failed (see its output above)")
    return time.monotonic() - started


def build_in_two(dbt: WarmDbt, *held: str) -> None:
    """``dbt build``: below gold on one thread, then gold on several; fails as it would."""
    first = dbt.invoke(*below_silver_args(), *held)
    if first.result is None or first.exception is not None:
        raise IngestError("`dbt build` stopped before its first node (see its output above)")
    stopped = () if first.success else failed_in(first.result.results)
    second = dbt.invoke(*gold_args(stopped), *held)
    if not (first.success and second.success):
        raise IngestError("`dbt build` failed (see its output above)")


@contextlib.contextmanager
def build_lock(spark: Any, tables: TableLocation, holder: str | None = None) -> Iterator[tuple[str, ...]]:
    """dbt's build lock held with delta-rs as ``holder`` (a new one by default), its table made
    first on a new lakehouse (the statement dbt's hook runs); yields the ``--vars`` that tell dbt's
    hooks this process holds it. A caller that invokes dbt again and again keeps one holder: dbt
    parses the whole project again when its vars change."""
    spark.sql(f"create schema if not exists {LOCK_NAME.split('.')[0]}")
    spark.sql(LOCK_DDL)
    holder = holder or new_holder("dbt-build")
    with holding_build_lock(tables, "dbt-build", holder):
        yield ("--vars", json.dumps({LOCK_HELD_VAR: holder}))


def _count(spark: Any, table: str) -> int:
    return int(spark.table(table).count())


def summary(spark: Any) -> list[str]:
    """Rows per layer and game, and the top players across games."""
    registry = read_games(PROJECT_DIR / SEED)
    lines = [
        f"bronze.game_events             {_count(spark, 'bronze.game_events'):>10} rows",
        f"silver.silver_quarantine       {_count(spark, 'silver.silver_quarantine'):>10} rows",
    ]
    for game in registry:
        state = "active" if game.is_active else "inactive"
        lines.append(
            f"{game.slug:<24} {state:<8} silver {_count(spark, f'silver.silver_{game.slug}'):>8} events, "
            f"gold {_count(spark, f'gold.gold_{game.slug}_player_agg'):>6} players, "
            f"{_count(spark, f'gold.gold_{game.slug}_daily_active'):>4} days"
        )
    lines.append(f"top {TOP_PLAYERS} players by best score (gold.gold_all_games_player_agg):")
    top = spark.sql(
        "select display_name, gamer_id, best_score, event_count, session_count "
        f"from gold.gold_all_games_player_agg order by best_score desc nulls last limit {TOP_PLAYERS}"
    ).collect()
    lines += [
        f"  {row.display_name:<18} {row.gamer_id:<20} best score {row.best_score}, "
        f"{row.event_count} events, {row.session_count} sessions"
        for row in top
    ]
    return lines


def run(_args: argparse.Namespace | None = None) -> int:
    from ingest.core.spark.object_storage import lakehouse_uri
    from ingest.core.spark.session import local_session

    if sync(PROJECT_DIR, check=True).changed:
        raise ConfigError(
            "seeds/games.csv or ingest/core/bronze_contract.yml changed since the models were generated: "
            "run `ingest games sync`"
        )
    lakehouse = lakehouse_uri()
    spark = local_session(lakehouse=lakehouse)
    bronze_rows = table_rows(Path(str(spark.conf.get(BRONZE_PATH)))) if lakehouse is None else None
    set_mode(spark, interpreted(bronze_rows))
    dbt = WarmDbt(PROJECT_DIR, PROFILES_DIR)  # the build parses the project; docs reuse that parse
    started = time.monotonic()
    with build_lock(spark, TableLocation.of(str(spark.conf.get("spark.sql.warehouse.dir")))) as held:
        build_in_two(dbt, *held)
        seconds = {"build (lock, parse and seed included)": time.monotonic() - started}
        seconds["docs"] = _dbt(dbt, "docs", "generate", "--no-compile", *held)
    docs_site.finish()
    print("\n".join(["", "lakehouse:", *(f"   {line}" for line in summary(spark))]))
    mode = "interpreted" if interpreted(bronze_rows) else "compiled"
    print("   dbt: " + ", ".join(f"{step} {took:.1f}s" for step, took in seconds.items()) + f" ({mode})")
    print(
        "   docs: run `make docs-serve` and open http://127.0.0.1:8580 "
        "(the overview page, then a game's lineage: the graph button, bottom right)"
    )
    return 0


def add_parser(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser(
        "dbt-build",
        help="dbt build (the seed included) + docs generate on the embedded Spark, then a summary",
        description="Run the dbt project (bronze -> silver -> gold per game) on the local target, generate "
        "the docs site and print rows per layer and game and the top players.",
    )
    parser.set_defaults(handler=run)


if __name__ == "__main__":
    import sys

    try:
        sys.exit(run())
    except IngestError as err:
        print(f"dbt-build: error: {err}", file=sys.stderr)
        sys.exit(1)
