"""Find a Java runtime new enough for each server.

Kafka and Spark run on Java 17. Apicurio Registry 3.3 is built for Java 21, so it
gets the newest JDK on the machine (Debian's images here carry a Temurin JDK beside
OpenJDK 17); ``REGISTRY_JAVA_HOME`` picks one explicitly.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
from functools import cache
from pathlib import Path

from ingest.core.errors import StackError

_JVM_ROOTS = [Path("/usr/lib/jvm"), Path("/opt/java")]


@cache
def _major_version(java: str) -> int:
    try:
        out = subprocess.run([java, "-version"], capture_output=True, text=True, timeout=30).stderr
    except (OSError, subprocess.TimeoutExpired):
        return 0
    match = re.search(r'version "(\d+)(?:\.(\d+))?', out)
    if not match:
        return 0
    major = int(match.group(1))
    return int(match.group(2) or 0) if major == 1 else major


def _candidates(env_var: str) -> list[str]:
    found = []
    if home := os.environ.get(env_var):
        found.append(str(Path(home) / "bin" / "java"))
    if home := os.environ.get("JAVA_HOME"):
        found.append(str(Path(home) / "bin" / "java"))
    if on_path := shutil.which("java"):
        found.append(on_path)
    for root in _JVM_ROOTS:
        if root.is_dir():
            found.extend(str(p / "bin" / "java") for p in sorted(root.iterdir()))
    return [j for j in dict.fromkeys(found) if Path(j).is_file()]


def java_for(server: str, minimum: int, env_var: str = "JAVA_HOME") -> str:
    """A java binary of at least ``minimum``; the first found, else the newest. Clear error if none."""
    candidates = _candidates(env_var)
    versions = {java: _major_version(java) for java in candidates}
    good = [java for java, major in versions.items() if major >= minimum]
    if good:
        return good[0]
    seen = ", ".join(f"{j} ({v})" for j, v in versions.items()) or "none"
    raise StackError(
        f"{server} needs Java {minimum} or newer; found: {seen}. "
        f"Install a JDK {minimum}+ and point {env_var} at it."
    )
