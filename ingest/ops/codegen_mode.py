"""Whether a refresh cycle's Spark statements run compiled or interpreted.

Spark compiles each statement's plan into Java classes (whole-stage code generation), caches
them by their source, and the JIT compiles the hot ones again. A refresh cycle's statements are
new each cycle (their bronze versions, event dates and timestamps are literals in the generated
code), so the cache misses: a warm 5-game cycle of 6,000 events compiled about 1,230 classes
(Janino 5-7 s, then the C2 JIT about 12 s of CPU), for rows that take less to process than that.
Interpreted, the same cycle compiled none and took 40-44 s against 51-56 s; at 100,000 rows a
cycle the two were even (bench/results/jvm_cpu.md), and at 140,000 once the JIT had settled
(ten cycles a process, two pairs in both orders: the JIT's CPU halved, the wall the same). So a
cycle reading fewer rows than ``interpreted_below`` runs interpreted, and a larger one (or one of
unknown size) compiled.
``ingest dbt-build`` (``make run``'s build) chooses the same way from all of bronze's rows, the
most any of its builds can read.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

INTERPRETED_BELOW_ROWS = 100_000  # the break-even measured at 100,000 rows a cycle
WHOLE_STAGE = "spark.sql.codegen.wholeStage"
FACTORY_MODE = "spark.sql.codegen.factoryMode"  # NO_CODEGEN: expressions evaluated, not compiled
COMPILED = {WHOLE_STAGE: "true", FACTORY_MODE: "FALLBACK"}  # Spark's defaults
INTERPRETED = {WHOLE_STAGE: "false", FACTORY_MODE: "NO_CODEGEN"}


def interpreted(rows: int | None, interpreted_below: int = INTERPRETED_BELOW_ROWS) -> bool:
    """True when a cycle of ``rows`` new bronze rows (None: not known) should run interpreted."""
    return rows is not None and rows < interpreted_below


def set_mode(spark: Any, run_interpreted: bool) -> None:
    for key, value in (INTERPRETED if run_interpreted else COMPILED).items():
        spark.conf.set(key, value)


def classes_compiled(spark: Any) -> int:
    """How many generated classes this JVM has compiled so far (Spark's codegen cache misses)."""
    return int(spark._jvm.org.apache.spark.metrics.source.CodegenMetrics.METRIC_COMPILATION_TIME().getCount())


def table_rows(path: Path) -> int | None:
    """The rows of the Delta table at ``path`` from its log's file statistics (delta-rs, no Spark);
    None when there is no table there or a file has no row count."""
    import pyarrow as pa
    from deltalake import DeltaTable

    if not DeltaTable.is_deltatable(str(path)):
        return None
    counts = pa.table(DeltaTable(str(path)).get_add_actions(flatten=True))["num_records"].to_pylist()
    return None if None in counts else sum(counts)
