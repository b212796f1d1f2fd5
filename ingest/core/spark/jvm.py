"""Where the product's JVM jars live: Delta Lake for Spark, resolved into .cache/jvm by ``make jvm``."""

from __future__ import annotations

from pathlib import Path

from ingest.core.errors import ConfigError
from ingest.core.settings.paths import JVM_DIR

DELTA_VERSION = "4.4.0"  # must match the delta-spark wheel
SPARK_BINARY_VERSION = "4.2"  # must match the pyspark wheel
DELTA_JARS_DIR = JVM_DIR / f"delta-{DELTA_VERSION}"


def delta_jars() -> list[Path]:
    jars = sorted(DELTA_JARS_DIR.glob("*.jar"))
    if not jars:
        raise ConfigError(f"no Delta jars in {DELTA_JARS_DIR}: run `make jvm`")
    return jars
