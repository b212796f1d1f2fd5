"""The package layers hold, and the check that holds them (import-linter, in `make lint`) can fail."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

from ingest.core.settings.paths import PROJECT_DIR

LINT_IMPORTS = Path(sys.executable).with_name("lint-imports")


def _lint_imports(project: Path) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PYTHONPATH": str(project)}
    return subprocess.run([LINT_IMPORTS], cwd=project, env=env, capture_output=True, text=True, timeout=120)


def test_the_package_layers_hold():
    result = _lint_imports(PROJECT_DIR)
    assert result.returncode == 0, result.stdout + result.stderr
    assert "3 kept, 0 broken" in result.stdout


def _with_import(tmp_path: Path, module: str, imported: str) -> subprocess.CompletedProcess[str]:
    """lint-imports on a copy of the project in which ``module`` also imports ``imported``."""
    shutil.copytree(PROJECT_DIR / "ingest", tmp_path / "ingest", ignore=shutil.ignore_patterns("__pycache__"))
    shutil.copytree(
        PROJECT_DIR / "dev" / "gamelake_dev",
        tmp_path / "gamelake_dev",
        ignore=shutil.ignore_patterns("__pycache__", "gen"),
    )
    shutil.copy(PROJECT_DIR / "pyproject.toml", tmp_path)
    source = tmp_path / (module.replace(".", "/") + ".py")
    package, _, name = imported.rpartition(".")
    source.write_text(
        source.read_text() + f"\n\ndef _wrong_way():\n    from {package} import {name}  # noqa\n"
    )
    return _lint_imports(tmp_path)


def test_a_wrong_way_import_breaks_the_layers(tmp_path):
    result = _with_import(tmp_path, "ingest.landing.kafka.offsets", "gamelake_dev.demo_schemas")
    assert result.returncode != 0
    assert "ingest.landing is not allowed to import gamelake_dev" in result.stdout


def test_decoding_may_not_reach_up_to_the_delta_writer(tmp_path):
    result = _with_import(tmp_path, "ingest.landing.decode.decoder", "ingest.landing.delta.bronze_writer")
    assert result.returncode != 0
    assert "ingest.landing.decode is not allowed to import ingest.landing.delta" in result.stdout
