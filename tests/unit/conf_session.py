"""A stand-in for the one part of a SparkSession that handing facts to a build touches: its
runtime conf, where the refresh sets what the models read (spark.gamelake.*)."""

from __future__ import annotations

import json
from typing import Any


class RuntimeConf:
    def __init__(self) -> None:
        self.values: dict[str, str] = {}

    def set(self, key: str, value: str) -> None:
        self.values[key] = value

    def get(self, key: str, default: str | None = None) -> str | None:
        return self.values.get(key, default)


class ConfSession:
    def __init__(self) -> None:
        self.conf = RuntimeConf()

    def handed(self, conf: str) -> Any:
        """What was handed in ``conf``, as the macros parse it."""
        return json.loads(self.conf.values[conf])
