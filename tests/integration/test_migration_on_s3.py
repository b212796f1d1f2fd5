"""``ingest bronze migrate-native-types`` across a lakehouse on the local S3 server.

test_dbt_native_migration.py's lake, with bronze, silver and gold on S3 and dbt run from a
shell (its Spark reaching S3 through S3A): the command converts bronze and silver together on S3,
keeping every row's values and offsets, and moves gold's marks. Nothing lands on the local disk
but dbt's Derby catalog. What follows a migration (``dbt test`` on the rewritten silver, a build
of natively landed rows on top) runs the same SQL on either storage: test_dbt_native_migration.py
runs it on the local disk, and test_lakehouse_on_s3.py builds natively landed rows on S3.
"""

from __future__ import annotations

import base64
import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from confluent_kafka.schema_registry import Schema

from ingest.core.settings.paths import PROJECT_DIR
from ingest.landing.delta.table_location import TableLocation
from tests.integration.ingest_support import ingest_cli, registry_client
from tests.integration.test_dbt_native_migration import (
    GAME,
    JSON_ERA,
    TOPIC,
    Lake,
    _event_file,
    _expected_silver,
    _Schemas,
)

pytestmark = [pytest.mark.integration, pytest.mark.slow]

DBT = str(Path(sys.executable).parent / "dbt")


class S3Lake(Lake):
    """Bronze, silver and gold on S3; dbt from a shell with the S3 settings in SPARK_CONF_DIR."""

    def __init__(self, root: Path, schemas: _Schemas, lakehouse: str, env: dict[str, str]) -> None:
        super().__init__(root, None, schemas, TableLocation.of(f"{lakehouse}/bronze/game_events"))
        self.lakehouse, self.env = lakehouse, env
        self.conf_dir = _spark_conf_dir(env)

    def dbt(self, *args: str) -> None:
        where = ["--project-dir", str(self.project), "--profiles-dir", str(self.project / "profiles")]
        done = subprocess.run(
            [DBT, *args, *where, "--target", "local"],
            env={**self.env, "SPARK_CONF_DIR": str(self.conf_dir)},
            cwd=self.project, capture_output=True, text=True, timeout=900,
        )  # fmt: skip
        assert done.returncode == 0, f"dbt {' '.join(args)}:\n{done.stdout[-4000:]}"

    def _rows(self, schema: str, table: str) -> list[dict[str, Any]]:
        place = TableLocation.of(f"{self.lakehouse}/spark-warehouse/{schema}.db/{table}")
        return list(place.delta_table().to_pyarrow_table().to_pylist())

    def silver(self) -> dict[str, dict[str, Any]]:
        return {r["event_id"]: r for r in self._rows("silver", f"silver_{GAME}")}


def _spark_conf_dir(env: dict[str, str]) -> Path:
    """The S3 settings rendered as an analyst's shell gets them (``write-defaults --s3``)."""
    done = subprocess.run(
        [sys.executable, "-m", "ingest.core.spark.session", "write-defaults", "--s3"],
        env=env, cwd=PROJECT_DIR, capture_output=True, text=True,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    exported = [line for line in done.stdout.splitlines() if line.startswith("export SPARK_CONF_DIR=")]
    assert exported, done.stdout
    return Path(exported[0].split("=", 1)[1])


@pytest.fixture
def lake(stack, on_s3: str, tmp_path: Path) -> S3Lake:
    raw = base64.b64encode(_event_file().SerializeToString()).decode()
    schema_id = registry_client(stack.registry_url).register_schema(
        f"{TOPIC}-migration-value", Schema(raw, "PROTOBUF")
    )
    env = {k: v for k, v in os.environ.items() if not k.startswith("GAMELAKE_INGEST_")}
    env |= {
        "GAMELAKE_INGEST_WAREHOUSE_URI": on_s3,
        "GAMELAKE_INGEST_WAREHOUSE_DIR": str(tmp_path / "local"),
        "GAMELAKE_INGEST_REGISTRY_URL": stack.registry_url,
        "GAMELAKE_WAREHOUSE_DIR": str(tmp_path / "local"),
        "DBT_TARGET_PATH": str(tmp_path / "target"),
        "DBT_LOG_PATH": str(tmp_path / "dbt-logs"),
        "DBT_SEND_ANONYMOUS_USAGE_STATS": "false",
    }
    return S3Lake(tmp_path, _Schemas(schema_id), on_s3, env)


def test_silver_and_gold_on_s3_built_on_json_text_are_migrated_there(lake: S3Lake):
    lake.land(lake.events(60), json_text=True)
    lake.dbt("build")
    before = lake.silver()
    assert all(isinstance(before[e.event_id]["loadout"], str | None) for e in lake.sent), "text in silver"

    migrated = ingest_cli(lake.env, "bronze", "migrate-native-types")
    assert migrated.returncode == 0, migrated.stderr[-3000:]
    summary = json.loads(migrated.stdout)
    assert summary["bronze"].startswith(lake.lakehouse)
    silver = summary["silver"][f"silver.silver_{GAME}"]
    assert set(silver["columns_converted"]) == set(JSON_ERA) and silver["rows_rewritten"] == 60
    gold_tables = {f"gold.gold_{GAME}_player_agg", f"gold.gold_{GAME}_daily_active"}
    assert set(silver["gold_marks_moved"]) == gold_tables
    rewritten = lake.silver()
    for e in lake.sent:
        got = rewritten[e.event_id]
        assert {"loadout": got["loadout"], "perks": got["perks"]} == _expected_silver(e), e.event_id
        assert got["kafka_offset"] == before[e.event_id]["kafka_offset"]
    local = Path(lake.env["GAMELAKE_WAREHOUSE_DIR"])
    assert sorted(p.name for p in local.iterdir()) == ["s3"], "no table on the local disk"
