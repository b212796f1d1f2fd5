"""Where the project keeps its files. One place, so the stack, Spark and dbt agree."""

from __future__ import annotations

import os
from pathlib import Path

PROJECT_DIR = Path(os.environ.get("GAMELAKE_HOME", Path(__file__).resolve().parents[3]))
CACHE_DIR = PROJECT_DIR / ".cache"
JVM_DIR = CACHE_DIR / "jvm"
STACK_DIR = Path(os.environ.get("GAMELAKE_STACK_DIR", PROJECT_DIR / ".stack"))
WAREHOUSE_DIR = Path(os.environ.get("GAMELAKE_WAREHOUSE_DIR", PROJECT_DIR / "warehouse"))


def spark_warehouse(warehouse: Path) -> Path:
    """Spark's spark.sql.warehouse.dir under a lakehouse root: where dbt keeps silver and gold."""
    return warehouse / "spark"
