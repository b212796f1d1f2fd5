"""The one bronze this service lands on: native column types. A bronze from before them holds
JSON text in some of its columns, and the service refuses it with the migration's name.

The table property ``gamelake.json_era_columns`` tells them apart: ``[]`` on a bronze with native
types (set when it is created, or before its first field column), the columns still holding JSON
text on an older one (a service of the first native-types versions listed them), and absent on a
bronze from before the property. ``ingest bronze migrate-native-types`` leaves it ``[]``.
"""

from __future__ import annotations

import json
from pathlib import Path

from ingest.core.errors import ConfigError

JSON_ERA_COLUMNS = "gamelake.json_era_columns"
TYPED_COLUMNS = {JSON_ERA_COLUMNS: "[]"}


class JsonEraBronzeError(ConfigError):
    """Bronze holds JSON text from before native types: migrate it first."""


def refuse_json_era(path: Path | str, configuration: dict[str, str], field_columns: list[str]) -> None:
    """JsonEraBronzeError, in one line naming the migration, unless bronze has native types."""
    listed = configuration.get(JSON_ERA_COLUMNS)
    if listed is None and field_columns:
        found = f"field columns but no {JSON_ERA_COLUMNS} property: it was landed before native types"
    elif listed is not None and json.loads(listed):
        texts = list(json.loads(listed))
        shown = ", ".join(texts[:5]) + (f" and {len(texts) - 5} more" if len(texts) > 5 else "")
        found = f"JSON text from before native types in {shown}"
    else:
        return
    raise JsonEraBronzeError(
        f"the bronze table at {path} holds {found}; stop every ingest instance, run "
        "`ingest bronze migrate-native-types`, then start again"
    )
