"""``ingest dbt-build`` (make run's dbt step) holds dbt's build lock itself, with delta-rs: it
refuses, naming the holder, while another build holds it, and changes nothing."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from ingest.core.settings.paths import PROJECT_DIR
from ingest.landing.delta.table_scan import scan
from ingest.ops.dbt_build_lock import LOCK_DDL, holding_build_lock, lock_table
from tests.integration.ingest_support import ingest_cli

pytestmark = pytest.mark.integration

MAKE_LOCK_TABLE = (
    "from ingest.core.spark.session import local_session; spark = local_session(); "
    "spark.sql('create schema if not exists silver'); "
    f"spark.sql('{LOCK_DDL}')"
)


def _env(warehouse: Path) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("GAMELAKE_INGEST_")}
    return env | {
        "GAMELAKE_WAREHOUSE_DIR": str(warehouse),
        "DBT_TARGET_PATH": str(warehouse / "target"),
        "DBT_LOG_PATH": str(warehouse / "dbt-logs"),
    }


def test_dbt_build_refuses_while_another_build_holds_the_lock_and_changes_nothing(tmp_path):
    env = _env(tmp_path)
    made = subprocess.run(
        [sys.executable, "-c", MAKE_LOCK_TABLE], env=env, cwd=PROJECT_DIR, capture_output=True, text=True
    )
    assert made.returncode == 0, made.stderr[-3000:]
    tables = tmp_path / "spark"

    with holding_build_lock(tables, "refresh") as held:
        assert held
        refused = ingest_cli(env, "dbt-build")
        assert refused.returncode == 1, refused.stdout[-3000:] + refused.stderr[-3000:]
        assert "refresh (refresh-" in refused.stderr and "nothing was changed" in refused.stderr
        assert sorted(p.name for p in (tables / "silver.db").iterdir()) == ["gamelake_build_lock"]
        assert not (tables / "gold.db").exists()
        assert not (tmp_path / "dbt-logs").exists(), "dbt did not start"

    # released by its holder: the lock's table is empty again, nothing of dbt-build's left in it
    assert scan(lock_table(tables).delta_table()).num_rows == 0
