"""The bronze contract is declared once: a change there reaches every file that states it (no services)."""

from __future__ import annotations

import re
import shutil
from pathlib import Path
from typing import Any

import pytest
import yaml

from ingest.core.contract import DEFAULT_PATH, load_contract
from ingest.core.errors import ConfigError
from ingest.core.settings.paths import PROJECT_DIR
from ingest.games.layout import (
    CONTRACT_DOCS,
    CONTRACT_MACROS,
    SILVER_YML,
    SOURCE_YML,
    STAGING_YML,
)
from ingest.games.model_files import sync
from ingest.landing.decode.bronze_columns import EVENT_TIME_FIELD, KAFKA_COLUMNS, PARTITION_COLUMN

HERO_CLASS = """\
  - bronze: hero_class
    name: hero_class
    type: string
    since: 5
    description: The hero class the player picked.
"""
# After the contract's cast columns: the derived one, then what silver adds.
SILVER_TAIL = ["bronze_row_key", "bronze_version", "dq_warnings", "silver_loaded_at"]


@pytest.fixture
def scratch(tmp_path: Path) -> tuple[Path, Path]:
    """A scratch copy of the dbt project files sync reads and writes, and of the contract."""
    for name in ("seeds", "models", "macros"):
        shutil.copytree(PROJECT_DIR / name, tmp_path / name)
    contract = tmp_path / "bronze_contract.yml"
    shutil.copy(DEFAULT_PATH, contract)
    return tmp_path, contract


def _edit(contract: Path, old: str, new: str) -> None:
    text = contract.read_text()
    assert old in text, old
    contract.write_text(text.replace(old, new, 1))


def _yml(path: Path) -> Any:
    return yaml.safe_load(path.read_text())


def _docs(path: Path) -> dict[str, str]:
    return dict(re.findall(r"\{% docs (\w+) %\}\n(.*?)\n\{% enddocs %\}", path.read_text(), re.S))


def _names(columns: list[dict[str, Any]]) -> list[str]:
    return [column["name"] for column in columns]


def test_one_change_to_the_contract_reaches_every_file_that_states_it(scratch: tuple[Path, Path]) -> None:
    project, contract = scratch
    _edit(contract, "    name: device_id\n", "    name: device_key\n")
    contract.write_text(contract.read_text() + HERO_CLASS)

    result = sync(project, contract_path=contract)

    assert set(result.written) == {CONTRACT_MACROS, CONTRACT_DOCS, STAGING_YML, SOURCE_YML, SILVER_YML}
    macros = (project / CONTRACT_MACROS).read_text()
    assert "{'bronze': 'hero_class', 'name': 'hero_class', 'type': 'string', 'since': 5}," in macros
    assert "{'bronze': 'device_id', 'name': 'device_key', 'type': 'string', 'since': 1}," in macros
    docs = _docs(project / CONTRACT_DOCS)
    assert docs["col_hero_class"] == "The hero class the player picked. Null before schema v5."
    assert docs["col_device_key"] == "The device the event came from. From bronze device_id."
    assert "col_device_id" not in docs
    staging = _names(_yml(project / STAGING_YML)["models"][0]["columns"])
    assert staging[-1] == "hero_class" and "device_key" in staging and "device_id" not in staging
    source = _yml(project / SOURCE_YML)["sources"][0]["tables"][0]["columns"]
    assert source[-1] == {"name": "hero_class", "description": docs["col_hero_class"]}
    assert "device_id" in _names(source), "the bronze column keeps its name"
    silver = _yml(project / SILVER_YML)["models"]
    assert len(silver) == 5, "one silver model per game of the seed"
    for model in silver:
        names = _names(model["columns"])
        assert names[names.index("ingested_at") + 1 :] == ["hero_class", *SILVER_TAIL]
        assert "device_key" in names and "device_id" not in names
    assert not sync(project, check=True, contract_path=contract).changed


def test_an_event_type_added_to_the_contract_reaches_the_macro_that_every_check_reads(
    scratch: tuple[Path, Path],
) -> None:
    project, contract = scratch
    _edit(contract, "achievement]", "achievement, trade]")

    sync(project, contract_path=contract)

    assert "'achievement',\n        'trade',\n    ]" in (project / CONTRACT_MACROS).read_text()
    # the all-games silver check and the known_event_type rule read the macro, not a copy
    checks = (project / "macros" / "games" / "new_rows_checks.sql").read_text()
    rules = (project / "macros" / "medallion" / "gamelake_expectations.sql").read_text()
    assert "gamelake_event_types()" in checks and "gamelake_event_types()" in rules
    for model in _yml(project / SILVER_YML)["models"]:
        assert not [c for c in model["columns"] if c.get("data_tests")], "a per-game copy of a check"


INVALID = [
    (
        "    name: device_id\n",
        "    name: event_id\n",
        "columns[6] (event_id): staging name 'event_id' is already used by columns[0]",
    ),
    (
        "  - bronze: device_id\n",
        "  - bronze: event_id\n",
        "columns[6] (device_id): bronze column 'event_id' is already used",
    ),
    ("    name: device_id\n", "    name: bronze_row_key\n", "derived[0] (bronze_row_key): staging name"),
    (
        "    name: device_id\n",
        "    name: device id\n",
        "columns[6] (device id): name 'device id' is not a safe column name",
    ),
    (
        "    name: device_id\n",
        "    name: select\n",
        "columns[6] (select): name 'select' is not a safe column name: it is a reserved",
    ),
    ("  - bronze: device_id\n", "  - bronze: device`id\n", "bronze 'device`id' is not a safe column name"),
    (
        "    type: double\n",
        "    type: varchar\n",
        "columns[15] (network_latency_ms): type 'varchar' is not one of",
    ),
    (
        "    since: 4\n",
        "    since: v4\n",
        "columns[13] (client_build): since must be an event schema version",
    ),
    (
        "    since: 4\n",
        "    since: 4\n    nullable: true\n",
        "columns[13] (client_build): unknown key(s) nullable",
    ),
    (
        "    since: 4\n    description: Game client build.\n",
        "    since: 4\n",
        "columns[13] (client_build): missing description",
    ),
    (
        "    description: Game client build.\n",
        "    description: ''\n",
        "description must be one line of text",
    ),
    ("passthrough_prefix: proto_", "passthrough_prefix: proto", "passthrough_prefix: 'proto' is not"),
    ("passthrough_prefix: proto_", "passthrough_prefix: 'x;'", "passthrough_prefix: 'x;' is not"),
    ("level_up,", "level-up,", "event_types: 'level-up' is not a safe event type"),
    ("level_up,", "purchase,", "event_types: 'purchase' is listed twice"),
]


@pytest.mark.parametrize(("old", "new", "message"), INVALID)
def test_an_invalid_contract_is_refused_naming_the_file_and_the_entry(
    scratch: tuple[Path, Path], old: str, new: str, message: str
) -> None:
    project, contract = scratch
    _edit(contract, old, new)
    before = (project / SILVER_YML).read_text()

    with pytest.raises(ConfigError) as raised:
        sync(project, contract_path=contract)

    assert str(raised.value).startswith(f"{contract}: ")
    assert message in str(raised.value)
    assert (project / SILVER_YML).read_text() == before, "nothing is written"


def test_renaming_a_column_the_models_test_is_refused_not_silently_untested(
    scratch: tuple[Path, Path],
) -> None:
    project, contract = scratch
    _edit(contract, "    name: event_id\n", "    name: event_key\n")

    with pytest.raises(ConfigError, match="silver_<game> has data tests on event_id"):
        sync(project, contract_path=contract)


def test_the_contract_agrees_with_the_columns_the_ingest_lands() -> None:
    contract = load_contract()
    spark_type = {"string": "string", "int32": "int", "int64": "bigint", "timestamp[us, tz=UTC]": "timestamp"}
    kafka = {c.bronze: c for c in contract.columns if c.bronze.startswith("_")}
    assert {name: c.type for name, c in kafka.items()} == {
        field.name: spark_type[str(field.type)] for field in KAFKA_COLUMNS
    }
    assert all(c.since == 1 for c in kafka.values()), "Kafka metadata columns are in every version"
    assert {PARTITION_COLUMN, EVENT_TIME_FIELD} <= {c.bronze for c in contract.columns}


def test_staging_names_are_the_cast_and_the_derived_columns() -> None:
    contract = load_contract()
    assert contract.staging_names == {c.name for c in contract.columns} | {"bronze_row_key"}
    assert "game_slug" in contract.staging_names and "game_name" not in contract.staging_names
    assert load_contract() is contract, "the default contract is read once"


def test_a_passthrough_named_like_a_staging_column_gets_the_prefix_and_others_keep_their_name() -> None:
    contract = load_contract()
    assert contract.passthrough_name("schema_id") == "proto_schema_id"  # staging's from _schema_id
    assert contract.passthrough_name("game_slug") == "proto_game_slug"  # staging's from game_name
    assert contract.passthrough_name("bronze_row_key") == "proto_bronze_row_key"  # derived
    assert contract.passthrough_name("hero_class") == "hero_class"
    assert contract.passthrough_name("game_name") == "game_name"  # a bronze name, not a staging one
    assert contract.is_contract_bronze("game_name") and not contract.is_contract_bronze("schema_id")


def test_the_ingest_announces_exactly_the_fields_staging_renames() -> None:
    from ingest.landing.service.lander import staging_renames

    assert staging_renames(["hero_class", "event_id", "game_name"], [7]) is None
    message = staging_renames(["hero_class", "event_at", "schema_id"], [7, 9])
    assert message is not None
    assert "schema id(s) [7, 9]" in message
    assert "event_at -> proto_event_at, schema_id -> proto_schema_id" in message
    assert "hero_class" not in message and "passthrough_prefix" in message
