"""Bronze's schema as it evolves: the columns and field numbers it knows, and new columns added
(or structs widened) in commits of their own before the rows that need them."""

from __future__ import annotations

import json

import pyarrow as pa
from deltalake import Field, write_deltalake
from deltalake.exceptions import CommitFailedError

from ingest.core.errors import IngestError
from ingest.landing.decode.bronze_columns import FIELD_NUMBERS_PREFIX, PARTITION_COLUMN, RESERVED_NAMES
from ingest.landing.decode.schema_guard import KnownColumn, KnownColumns
from ingest.landing.delta.bronze_format import JSON_ERA_COLUMNS, TYPED_COLUMNS
from ingest.landing.delta.bronze_log import BronzeLog
from ingest.landing.delta.log_state import LogState
from ingest.landing.records import FieldNumbers

_COMMIT_ATTEMPTS = 20


def known_columns(state: LogState) -> KnownColumns:
    """The columns bronze has at ``state``, and the field numbers of each message type it landed."""
    known = {f.name: KnownColumn(f.name, f.type) for f in state.arrow_schema()}
    return KnownColumns(known, _field_numbers(state.configuration))


def evolve(log: BronzeLog, columns: list[pa.Field], numbers: FieldNumbers) -> None:
    """Schema evolution, in commits of their own before the rows: new nullable columns, structs
    widened with their new fields, then the field numbers of the message types in ``numbers``
    (merged with what bronze holds).

    Another writer evolving bronze at the same time (a replay beside the service, two
    replays) makes a step fail with "metadata changed"; each step reads bronze again and
    changes only what is still missing, so the whole is retried.
    """
    for _ in range(_COMMIT_ATTEMPTS):
        try:
            _evolve_once(log, columns, numbers)
            return
        except CommitFailedError:
            continue  # another writer changed the schema or properties since we read them
    raise IngestError(f"could not evolve {log.path} after {_COMMIT_ATTEMPTS} attempts (heavy contention)")


def _evolve_once(log: BronzeLog, columns: list[pa.Field], numbers: FieldNumbers) -> None:
    state = log.latest()
    properties = {}
    if numbers:
        held = _field_numbers(state.configuration)
        properties = {
            FIELD_NUMBERS_PREFIX + name: json.dumps({**held.get(name, {}), **fields}, sort_keys=True)
            for name, fields in numbers.items()
        }
    # A new bronze says it has native types before its first field column, so no crash can
    # leave it looking old.
    if JSON_ERA_COLUMNS not in state.configuration and not field_column_names(state.arrow_schema()):
        properties.update(TYPED_COLUMNS)
    if properties:
        log.set_properties(properties)
    latest = {c.name: c for c in columns}  # a column widened twice in a batch: its last type
    add_fields(log, list(latest.values()))
    _widen(log, list(latest.values()))


def add_fields(log: BronzeLog, fields: list[pa.Field]) -> None:
    existing = set(log.latest().arrow_schema().names)
    fresh = [Field.from_arrow(f) for f in fields if f.name not in existing]
    if fresh:
        log.delta_rs().alter.add_columns(fresh)
        log.latest()


def _widen(log: BronzeLog, fields: list[pa.Field]) -> None:
    """Give existing columns the wider types of ``fields`` (structs that gained fields, at any
    depth): one empty append that merges the schema, a metadata-only commit."""
    schema = log.latest().arrow_schema()
    wider = {f.name: f for f in fields if f.name in schema.names and f.type != schema.field(f.name).type}
    if not wider:
        return
    merged = pa.schema([wider.get(f.name, f) for f in schema])
    write_deltalake(
        log.delta_rs(),
        merged.empty_table(),
        mode="append",
        schema_mode="merge",
        partition_by=[PARTITION_COLUMN],
    )
    log.latest()


def field_column_names(schema: pa.Schema) -> list[str]:
    """Bronze's columns of decoded fields (not the service's own), sorted."""
    return sorted(n for n in schema.names if n not in RESERVED_NAMES)


def _field_numbers(configuration: dict[str, str]) -> FieldNumbers:
    """The field numbers per message type, from bronze's table properties."""
    return {
        key.removeprefix(FIELD_NUMBERS_PREFIX): json.loads(value)
        for key, value in configuration.items()
        if key.startswith(FIELD_NUMBERS_PREFIX)
    }
