"""The shared metastore: PostgreSQL behind Spark's Hive client, for dbt from several JVMs at once.

Embedded Derby lets one JVM at a time open the metastore; this test runs dbt in three JVMs, two
of them at once, against one PostgreSQL metastore, each reading what another one made.
"""

from __future__ import annotations

import os
import subprocess
import sys
import uuid
from pathlib import Path

import pytest

from ingest.core.settings.paths import PROJECT_DIR

pytestmark = pytest.mark.integration

DBT = str(Path(sys.executable).parent / "dbt")
SEED = (PROJECT_DIR / "seeds" / "games.csv").read_text().splitlines()[1:]


@pytest.fixture(scope="module")
def metastore():
    """A database of its own on the stack's PostgreSQL metastore, with the metastore's schema."""
    from gamelake_dev.localstack import process, stack
    from gamelake_dev.localstack.metastore import metastore_server

    from ingest.core.spark.metastore import create_schema

    ports = stack.StackPorts.from_env()
    server = metastore_server(stack.METASTORE_DIR, ports.metastore)
    started = process.start(server)
    try:
        own = ports.shared_metastore.with_new_database(f"test_{uuid.uuid4().hex[:12]}")
        with pytest.MonkeyPatch.context() as patch:
            for name, value in own.client_environment().items():
                patch.setenv(name, value)
            create_schema(own.url)
        yield own
    finally:
        if started:
            process.stop(server)


def test_two_dbt_invocations_at_once_share_one_postgresql_metastore(metastore, tmp_path):
    env = {
        **{k: v for k, v in os.environ.items() if not k.startswith(("GAMELAKE_", "AWS_", "SPARK_CONF"))},
        **metastore.client_environment(),
        "GAMELAKE_WAREHOUSE_DIR": str(tmp_path / "warehouse"),  # the tables: one folder all JVMs reach
        "DBT_PROFILES_DIR": str(PROJECT_DIR / "profiles"),
        "DBT_SEND_ANONYMOUS_USAGE_STATS": "false",
    }
    conf_dir = tmp_path / "spark-conf"
    written = subprocess.run(
        [sys.executable, "-m", "ingest.core.spark.session", "write-defaults", "--conf-dir", str(conf_dir)],
        env=env,
        cwd=PROJECT_DIR,
        capture_output=True,
        text=True,
    )
    assert written.returncode == 0, written.stderr
    rendered = (conf_dir / "spark-defaults.conf").read_text()
    assert metastore.url in rendered
    assert metastore.password() not in rendered, "the password stays in the environment"
    env["SPARK_CONF_DIR"] = str(conf_dir)

    def dbt(name: str, *args: str) -> subprocess.Popen[str]:
        paths = ["--target-path", str(tmp_path / f"target-{name}"), "--log-path", str(tmp_path / name)]
        return subprocess.Popen(
            [DBT, *args, *paths],
            env=env,
            cwd=PROJECT_DIR,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            text=True,
        )

    def finished(proc: subprocess.Popen[str]) -> str:
        out, _ = proc.communicate(timeout=600)
        assert proc.returncode == 0, out[-4000:]
        return out

    def show(name: str, query: str) -> subprocess.Popen[str]:
        return dbt(name, "show", "--inline", query, "--output", "json")

    assert "Completed successfully" in finished(dbt("seeding", "seed"))  # one JVM makes reference.games
    # Two more JVMs at once, each with the metastore open, read what the first one made.
    counting = show("counting", "select count(*) as n from {{ ref('games') }}")
    naming = show("naming", "select max(game_slug) as last from {{ ref('games') }}")
    assert f'"n": {len(SEED)}' in finished(counting)
    assert f'"last": "{max(line.split(",")[0] for line in SEED)}"' in finished(naming)

    assert "reference" in metastore.psql('select "NAME" from "DBS"')
    assert "games" in metastore.psql('select "TBL_NAME" from "TBLS"')
    assert not (tmp_path / "warehouse" / "metastore_db").exists(), "no Derby metastore was made"
