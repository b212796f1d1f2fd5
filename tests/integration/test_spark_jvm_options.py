"""The Spark driver's collector as a real JVM runs it: the project's parallel collector, or the one
an operator names in GAMELAKE_SPARK_JVM_OPTIONS (ingest/core/spark/session.py)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from ingest.core.settings.paths import PROJECT_DIR
from ingest.core.spark.session import JVM_OPTIONS_VARIABLE

pytestmark = pytest.mark.integration

PROBE = """
import json, sys
from pathlib import Path
from ingest.core.spark.session import local_session
spark = local_session(Path(sys.argv[1]))
beans = spark._jvm.java.lang.management.ManagementFactory.getGarbageCollectorMXBeans()
print(json.dumps([beans.get(i).getName() for i in range(beans.size())]))
spark.stop()
"""


def _collectors(warehouse: Path, options: str | None) -> list[str]:
    env = {k: v for k, v in os.environ.items() if k != JVM_OPTIONS_VARIABLE}
    if options is not None:
        env[JVM_OPTIONS_VARIABLE] = options
    done = subprocess.run(
        [sys.executable, "-c", PROBE, str(warehouse)],
        cwd=PROJECT_DIR,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    return json.loads(done.stdout.strip().splitlines()[-1])


def test_the_driver_runs_the_parallel_collector_unless_an_operator_names_another(tmp_path: Path) -> None:
    assert _collectors(tmp_path / "default", None) == ["PS MarkSweep", "PS Scavenge"]
    named = _collectors(tmp_path / "named", "-XX:+UseG1GC")
    assert "G1 Young Generation" in named and "PS Scavenge" not in named
