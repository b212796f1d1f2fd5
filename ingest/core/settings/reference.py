"""doc/CONFIGURATION.md, written from ``IngestSettings`` so that the page cannot drift from the code.

``python -m ingest.core.settings.reference`` prints the page; ``make docs-config`` writes it, and a
unit test fails when the page and the settings disagree.
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

from pydantic.fields import FieldInfo
from pydantic_core import PydanticUndefined

from ingest.core.settings.ingest_settings import ENV_PREFIX, IngestSettings
from ingest.core.settings.paths import PROJECT_DIR

PAGE = PROJECT_DIR / "doc" / "CONFIGURATION.md"
FLAGS = {  # the settings a flag of `ingest run`, `status` and `dlq` sets too (settings/args.py)
    "bootstrap_servers": "--bootstrap-servers",
    "topics": "--topic (repeatable)",
    "group_id": "--group-id",
    "registry_url": "--registry-url",
    "warehouse_dir": "--warehouse-dir",
    "kafka": "--kafka KEY=VALUE (repeatable)",
}

HEADER = """# Configuration

Every setting of the ingest service (`ingest run`, and the `status`, `dlq` and `bronze` commands
that read the same settings). Generated from the settings class
(`ingest/core/settings/ingest_settings.py`) by `make docs-config`; a test fails when this page and
the code disagree.

Precedence, highest first: command-line flags, environment variables (`GAMELAKE_INGEST_<NAME>`),
a TOML file (`--config FILE`, keys as in the first column), then the defaults. Secrets are typed
as secrets: they print as `**********` in `repr`, logs and errors. librdkafka settings pass
through `kafka` (`--kafka KEY=VALUE`) untouched, except those the service owns.

| setting | environment variable | flag | default | what it is |
|---|---|---|---|---|
"""


def page() -> str:
    rows = [_row(name, info) for name, info in IngestSettings.model_fields.items()]
    return HEADER + "".join(rows)


def _row(name: str, info: FieldInfo) -> str:
    cells = [
        f"`{name}`",
        f"`{ENV_PREFIX}{name.upper()}`",
        FLAGS.get(name, ""),
        _default(info),
        (info.description or "").replace("|", "\\|").replace("\n", " "),
    ]
    return "| " + " | ".join(cells) + " |\n"


def _default(info: FieldInfo) -> str:
    if info.default_factory is not None:
        return "computed (see its description)"  # from the environment or the project folder
    value: Any = info.default
    if value is PydanticUndefined:
        return "required"
    if isinstance(value, Path):
        value = value.relative_to(PROJECT_DIR) if value.is_relative_to(PROJECT_DIR) else value
    if value is None:
        return "unset"
    if hasattr(value, "get_secret_value"):
        return "(secret)"
    return f"`{value}`".replace("|", "\\|")


def main(argv: list[str]) -> int:
    if argv == ["write"]:
        PAGE.write_text(page())
        print(f"wrote {PAGE.relative_to(PROJECT_DIR)}")
        return 0
    if not argv:
        sys.stdout.write(page())
        return 0
    print("usage: python -m ingest.core.settings.reference [write]", file=sys.stderr)
    return 2


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
