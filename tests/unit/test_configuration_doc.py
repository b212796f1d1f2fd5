"""doc/CONFIGURATION.md is the settings class's own page: every setting, as the code has it."""

from __future__ import annotations

from ingest.core.settings.ingest_settings import IngestSettings
from ingest.core.settings.reference import PAGE, page


def test_the_configuration_page_is_what_the_settings_class_says():
    assert PAGE.read_text() == page(), "doc/CONFIGURATION.md is stale: run `make docs-config`"


def test_every_setting_has_a_row_with_its_variable_and_a_description():
    rows = [line for line in page().splitlines() if line.startswith("| `")]
    assert len(rows) == len(IngestSettings.model_fields)
    for name, info in IngestSettings.model_fields.items():
        assert info.description, f"{name} has no description"
        assert any(f"`GAMELAKE_INGEST_{name.upper()}`" in row for row in rows), name
