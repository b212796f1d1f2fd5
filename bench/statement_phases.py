"""Where a refresh statement's time goes inside Spark: analysis, planning, execution.

    python -m bench.statement_phases [--rounds 4]

On the 5-game lakehouse bench.refresh_profile keeps (.cache/bench-profile/games-5, made there
first), in one warm Spark session, the SQL dbt compiled for its last cycle is run again as
queries (no writes): the all-games gold and silver checks, one game's silver batch and gold batch
(the SELECTs its INSERT and MERGE write), and a one-column scan of one gold table. Each is timed
in three phases: ``spark.sql`` (parse and analysis), the physical plan (``executedPlan``: here
Delta lists the table's files from its snapshot and skips by statistics, a Spark job per table
read) and ``collect``. The same again with Delta's statistics skipping off and with adaptive
execution off, interleaved, shows which phase a setting moves. Medians of all rounds after the
first are printed and appended to bench/results/statement_phases.md with the machine and date.
"""

from __future__ import annotations

import argparse
import re
import statistics
import time
from typing import Any

from bench.incremental import _session
from bench.results_file import append_section
from ingest.core.settings.paths import PROJECT_DIR

RESULTS = PROJECT_DIR / "bench" / "results" / "statement_phases.md"
LAKEHOUSE = PROJECT_DIR / ".cache" / "bench-profile" / "games-5"
COMPILED = LAKEHOUSE / "project" / "target" / "compiled" / "gamelake"
GAME = "kart_legends"
VARIANTS: dict[str, dict[str, str]] = {
    "defaults": {},
    "statistics skipping off": {"spark.databricks.delta.stats.skipping": "false"},
    "adaptive execution off": {"spark.sql.adaptive.enabled": "false"},
}


def _queries() -> dict[str, str]:
    if not (COMPILED / "data-tests" / "assert_gold_rows_valid.sql").exists():
        raise SystemExit(
            f"{COMPILED}: no compiled SQL; run `python -m bench.refresh_profile --games 5` first"
        )
    return {
        "all-games gold check": (COMPILED / "data-tests" / "assert_gold_rows_valid.sql").read_text(),
        "all-games silver check": (COMPILED / "data-tests" / "assert_silver_new_rows_valid.sql").read_text(),
        f"silver_{GAME} batch": (COMPILED / "models" / "silver" / "games" / f"silver_{GAME}.sql").read_text(),
        f"gold_{GAME}_player_agg batch": (
            COMPILED / "models" / "gold" / "games" / f"gold_{GAME}_player_agg.sql"
        ).read_text(),
        "one column of one gold table": f"select max(gamer_id) from gold.gold_{GAME}_player_agg",
    }


def _tables_read(sql: str) -> int:
    return len(re.findall(r"\b(?:from|join)\s+(?:silver|gold|bronze|reference)\.\w+", sql, re.I))


def _phases(spark: Any, sql: str) -> tuple[float, float, float]:
    started = time.perf_counter()
    frame = spark.sql(sql)
    analysed = time.perf_counter()
    frame._jdf.queryExecution().executedPlan()
    planned = time.perf_counter()
    frame.collect()
    return analysed - started, planned - analysed, time.perf_counter() - planned


def run(rounds: int) -> list[str]:
    queries = _queries()
    spark = _session(LAKEHOUSE)
    times: dict[tuple[str, str], list[tuple[float, float, float]]] = {}
    for round_ in range(rounds + 1):  # round 0 warms the session and is not counted
        for variant, confs in VARIANTS.items():
            for key, value in confs.items():
                spark.conf.set(key, value)
            for name, sql in queries.items():
                phases = _phases(spark, sql)
                if round_:
                    times.setdefault((variant, name), []).append(phases)
            for key in confs:
                spark.conf.unset(key)
    spark.stop()
    body = [
        f"- the SQL dbt compiled for the last profiled cycle of `{LAKEHOUSE.name}`, run as queries;"
        f" {rounds} rounds after a warm-up round, settings interleaved, one warm session",
        "",
        "| settings | query | tables read | analysis s | planning s | execution s | total s |",
        "|---|---|---:|---:|---:|---:|---:|",
    ]
    for (variant, name), values in times.items():
        medians = [statistics.median(v[i] for v in values) for i in range(3)]
        body.append(
            f"| {variant} | {name} | {_tables_read(queries[name])} | "
            + " | ".join(f"{m:.3f}" for m in medians)
            + f" | {sum(medians):.3f} |"
        )
    return body


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--rounds", type=int, default=4)
    args = parser.parse_args()
    append_section(
        RESULTS,
        "A refresh statement's phases",
        run(args.rounds),
        heading="# Where a refresh statement's time goes inside Spark\n",
    )


if __name__ == "__main__":
    main()
