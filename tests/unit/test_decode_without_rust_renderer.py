"""Setup without Rust: where `make setup` found no cargo, the Rust renderer of the JSON-text
columns is not installed, and the decoder renders them in Python with the same text.

The decode tests run again in a process that cannot import the extension (tests/conftest.py
hides it when GAMELAKE_HIDE_RUST_RENDERER is set): every shape, both paths, the path metric.
"""

from __future__ import annotations

import os
import subprocess
import sys

from ingest.core.settings.paths import PROJECT_DIR

DECODE_TESTS = (
    "tests/unit/test_native_decode.py",
    "tests/unit/test_ingest_decode.py",
    "tests/unit/test_native_types.py",
    "tests/unit/test_decode_never_raises.py",
)


def test_the_decode_tests_pass_without_the_rust_renderer():
    env = {**os.environ, "GAMELAKE_HIDE_RUST_RENDERER": "1"}
    command = [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", *DECODE_TESTS]
    result = subprocess.run(command, cwd=PROJECT_DIR, env=env, capture_output=True, text=True, timeout=900)
    assert result.returncode == 0, result.stdout[-5000:] + result.stderr[-2000:]
    assert " passed" in result.stdout and " failed" not in result.stdout


def test_the_hidden_extension_cannot_be_imported():
    code = "import gamelake_protojson"
    env = {**os.environ, "GAMELAKE_HIDE_RUST_RENDERER": "1"}
    hidden = subprocess.run(
        [sys.executable, "-c", "import tests.conftest; " + code],
        cwd=PROJECT_DIR, env=env, capture_output=True, text=True, timeout=60,
    )  # fmt: skip
    assert hidden.returncode != 0 and "ModuleNotFoundError" in hidden.stderr
