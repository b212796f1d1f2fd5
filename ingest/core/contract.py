"""The bronze -> staging column contract, read from ``bronze_contract.yml`` next to this module.

One declaration of which bronze columns staging reads, under which name and Spark type, since
which event schema version, with their docs, plus the event types. ``ingest games sync``
generates the dbt macros, docs and yml from it; the ingest service reads it too. Names end up
unquoted in SQL, so the loader refuses anything that is not a plain identifier, naming the
file and the entry.
"""

from __future__ import annotations

import functools
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

from ingest.core.errors import ConfigError
from ingest.core.identifiers import RESERVED_WORDS, slug_problem

DEFAULT_PATH = Path(__file__).with_name("bronze_contract.yml")
SPARK_TYPES = frozenset(
    ["string", "boolean", "tinyint", "smallint", "int", "bigint", "float", "double", "date", "timestamp"]
)
_IDENTIFIER = re.compile(r"[a-z_][a-z0-9_]*")
_COLUMN_KEYS = {"bronze", "name", "type", "since", "description"}
_TOP_KEYS = {"event_types", "derived", "columns", "passthrough_prefix"}


@dataclass(frozen=True)
class ContractColumn:
    """A bronze column staging casts to ``type`` and renames to ``name``."""

    bronze: str
    name: str
    type: str
    since: int
    description: str
    bronze_description: str | None = None

    @property
    def staging_doc(self) -> str:
        """The staging (and silver) column's docs: the description, when it is null, where from."""
        origin = f" From bronze {self.bronze}." if self.bronze != self.name else ""
        return self.description + self._null_note + origin

    @property
    def bronze_doc(self) -> str:
        return (self.bronze_description or self.description) + self._null_note

    @property
    def _null_note(self) -> str:
        return f" Null before schema v{self.since}." if self.since > 1 else ""


@dataclass(frozen=True)
class DerivedColumn:
    """A staging column the stage_bronze_events macro computes rather than casts from bronze."""

    name: str
    description: str


@dataclass(frozen=True)
class Contract:
    columns: tuple[ContractColumn, ...]
    derived: tuple[DerivedColumn, ...]
    event_types: tuple[str, ...]
    passthrough_prefix: str

    @property
    def staging_names(self) -> frozenset[str]:
        """Every column staging outputs for the contract, cast or derived."""
        return frozenset([c.name for c in self.columns] + [d.name for d in self.derived])

    def passthrough_name(self, bronze: str) -> str:
        """The staging name of a bronze column the contract does not list.

        Its own name, unless that is already a staging output column (a producer field called
        ``schema_id`` or ``event_at``): then ``passthrough_prefix`` + its name, so no model
        meets two columns of one name. The stage_bronze_events macro applies the same rule.
        """
        return self.passthrough_prefix + bronze if bronze in self.staging_names else bronze

    def is_contract_bronze(self, bronze: str) -> bool:
        return any(c.bronze == bronze for c in self.columns)


def load_contract(path: Path = DEFAULT_PATH) -> Contract:
    """The contract in ``path``. Raises ConfigError naming the file and the bad entry."""
    if path == DEFAULT_PATH:
        return _default_contract()
    return _load(path)


@functools.cache
def _default_contract() -> Contract:
    return _load(DEFAULT_PATH)


def _load(path: Path) -> Contract:
    data = _read(path)
    try:
        contract = Contract(
            columns=tuple(_column(entry, f"columns[{i}]") for i, entry in enumerate(data["columns"])),
            derived=tuple(_derived(entry, f"derived[{i}]") for i, entry in enumerate(data["derived"])),
            event_types=_event_types(data["event_types"]),
            passthrough_prefix=_prefix(data["passthrough_prefix"]),
        )
        _check_unique(contract)
    except ConfigError as err:
        raise ConfigError(f"{path}: {err}") from None
    return contract


def _read(path: Path) -> dict[str, Any]:
    try:
        data = yaml.safe_load(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, yaml.YAMLError) as err:
        raise ConfigError(f"{path}: cannot read the bronze contract: {err}") from err
    if not isinstance(data, dict) or set(data) != _TOP_KEYS:
        found = sorted(data) if isinstance(data, dict) else type(data).__name__
        raise ConfigError(f"{path}: expected exactly the keys {sorted(_TOP_KEYS)}, found {found}")
    for key in ("columns", "derived", "event_types"):
        if not isinstance(data[key], list) or not data[key]:
            raise ConfigError(f"{path}: {key} must be a non-empty list")
    return data


def _entry(entry: Any, where: str, required: set[str], optional: set[str]) -> dict[str, Any]:
    if not isinstance(entry, dict):
        raise ConfigError(f"{where}: expected a mapping, found {entry!r}")
    where = f"{where} ({entry.get('name', '?')})"
    if missing := required - set(entry):
        raise ConfigError(f"{where}: missing {', '.join(sorted(missing))}")
    if unknown := set(entry) - required - optional:
        raise ConfigError(f"{where}: unknown key(s) {', '.join(sorted(unknown))}")
    for key in ("bronze", "name"):
        if key in entry and (problem := _identifier_problem(entry[key])):
            raise ConfigError(f"{where}: {key} {entry[key]!r} is not a safe column name: it {problem}")
    for key in ("description", "bronze_description"):
        if key in entry and not _is_one_line(entry[key]):
            raise ConfigError(f"{where}: {key} must be one line of text, not {entry[key]!r}")
    return entry


def _column(entry: Any, where: str) -> ContractColumn:
    entry = _entry(entry, where, _COLUMN_KEYS, {"bronze_description"})
    where = f"{where} ({entry['name']})"
    if not isinstance(entry["type"], str) or entry["type"] not in SPARK_TYPES:
        raise ConfigError(f"{where}: type {entry['type']!r} is not one of {', '.join(sorted(SPARK_TYPES))}")
    since = entry["since"]
    if isinstance(since, bool) or not isinstance(since, int) or since < 1:
        raise ConfigError(f"{where}: since must be an event schema version (1, 2, ...), not {since!r}")
    return ContractColumn(**entry)


def _derived(entry: Any, where: str) -> DerivedColumn:
    return DerivedColumn(**_entry(entry, where, {"name", "description"}, set()))


def _event_types(values: list[Any]) -> tuple[str, ...]:
    seen: set[str] = set()
    for value in values:
        problem = slug_problem(value) if isinstance(value, str) else "is not text"
        if problem:
            raise ConfigError(f"event_types: {value!r} is not a safe event type: it {problem}")
        if value in seen:
            raise ConfigError(f"event_types: {value!r} is listed twice")
        seen.add(value)
    return tuple(values)


def _prefix(value: Any) -> str:
    if (problem := _identifier_problem(value)) or not str(value).endswith("_"):
        why = problem or "does not end in _"
        raise ConfigError(f"passthrough_prefix: {value!r} is not a safe column-name prefix: it {why}")
    return str(value)


def _identifier_problem(name: Any) -> str | None:
    if not isinstance(name, str):
        return "is not text"
    if not _IDENTIFIER.fullmatch(name):
        return "is not lowercase ASCII letters, digits and underscores starting with a letter or _"
    if name in RESERVED_WORDS:
        return "is a reserved SQL word"
    return None


def _is_one_line(text: Any) -> bool:
    return isinstance(text, str) and bool(text.strip()) and "\n" not in text.strip()


def _check_unique(contract: Contract) -> None:
    columns = [(f"columns[{i}] ({c.name})", c) for i, c in enumerate(contract.columns)]
    staging = [(where, c.name) for where, c in columns]
    staging += [(f"derived[{i}] ({d.name})", d.name) for i, d in enumerate(contract.derived)]
    bronze = [(where, c.bronze) for where, c in columns]
    for kind, entries in (("staging name", staging), ("bronze column", bronze)):
        first: dict[str, str] = {}
        for where, name in entries:
            if name in first:
                raise ConfigError(f"{where}: {kind} {name!r} is already used by {first[name]}")
            first[name] = where
