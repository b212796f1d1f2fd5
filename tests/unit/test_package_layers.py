"""The package layers hold, and the check that holds them (import-linter, in `make lint`) can fail."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

from ingest.core.paths import PROJECT_DIR

LINT_IMPORTS = Path(sys.executable).with_name("lint-imports")


def _lint_imports(project: Path) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PYTHONPATH": str(project)}
    return subprocess.run([LINT_IMPORTS], cwd=project, env=env, capture_output=True, text=True, timeout=120)


def test_the_package_layers_hold():
    result = _lint_imports(PROJECT_DIR)
    assert result.returncode == 0, result.stdout + result.stderr
    assert "1 kept, 0 broken" in result.stdout


def test_a_wrong_way_import_breaks_the_layers(tmp_path):
    shutil.copytree(PROJECT_DIR / "ingest", tmp_path / "ingest", ignore=shutil.ignore_patterns("__pycache__"))
    shutil.copy(PROJECT_DIR / "pyproject.toml", tmp_path)
    landing = tmp_path / "ingest" / "landing" / "offsets.py"
    landing.write_text(
        landing.read_text() + "\n\ndef _dev():\n    from ingest.dev import demo_schemas  # noqa\n"
    )
    result = _lint_imports(tmp_path)
    assert result.returncode != 0
    assert "ingest.landing is not allowed to import ingest.dev" in result.stdout
