"""The dbt files the bronze contract (ingest/core/bronze_contract.yml) becomes.

The staging macro's column list and the event types, the column docs blocks, and the property
files of the bronze source and of the staging model, so none of them restates the contract.
"""

from __future__ import annotations

from ingest.core.contract import Contract
from ingest.games.layout import FROM_CONTRACT
from ingest.games.yml import columns_yml, tested, yaml_str

# Over all of bronze: the audit (`dbt build --select tag:audit`), not every build.
_AUDIT = "\n              config: {tags: [audit]}"
_STAGING_TESTS = {
    "bronze_row_key": [f"unique:{_AUDIT}", f"not_null:{_AUDIT}"],
    "kafka_topic": [f"not_null:{_AUDIT}"],
}
# Over the rows new in this build: every build.
_NEW_ROWS = "\n              config: {where: 'bronze_version is not null'}"
_SLICE_TESTS = {
    "bronze_row_key": [f"unique:{_NEW_ROWS}", f"not_null:{_NEW_ROWS}"],
    "kafka_topic": [f"not_null:{_NEW_ROWS}"],
}
_SLICE_ONLY = (
    "bronze_version",
    "slice_from_version",
    "slice_to_version",
    "slice_built_at",
    "slice_reader_marks",
)


def contract_macros(contract: Contract) -> str:
    columns = "".join(
        f"\n        {{'bronze': '{c.bronze}', 'name': '{c.name}', 'type': '{c.type}', 'since': {c.since}}},"
        for c in contract.columns
    )
    event_types = "".join(f"\n        '{name}'," for name in contract.event_types)
    return (
        f"{{#- {FROM_CONTRACT}.\n"
        "    The bronze -> staging columns stage_bronze_events casts: bronze name, staging name,\n"
        "    type, and the event schema version that added it. -#}\n"
        "{% macro _bronze_event_columns() %}\n"
        f"    {{{{ return([{columns}\n    ]) }}}}\n"
        "{% endmacro %}\n\n"
        "{#- The prefix of a passed-through bronze column whose name is a staging column already. -#}\n"
        "{% macro _bronze_passthrough_prefix() %}\n"
        f"    {{{{ return('{contract.passthrough_prefix}') }}}}\n"
        "{% endmacro %}\n\n"
        "{#- The event types of the event schema (dev/gamelake_dev/proto), all versions. -#}\n"
        "{% macro gamelake_event_types() %}\n"
        f"    {{{{ return([{event_types}\n    ]) }}}}\n"
        "{% endmacro %}\n"
    )


def contract_docs(contract: Contract) -> str:
    """One docs block per staging column, used by every model's yml through doc("col_<name>")."""
    texts = [(c.name, c.staging_doc) for c in contract.columns]
    texts += [(d.name, d.description) for d in contract.derived]
    blocks = "".join(f"\n{{% docs col_{name} %}}\n{text}\n{{% enddocs %}}\n" for name, text in texts)
    return f"{FROM_CONTRACT}.\n{blocks}"


def staging_yml(contract: Contract) -> str:
    names = [d.name for d in contract.derived] + [c.name for c in contract.columns]
    columns = columns_yml(tested(names, _STAGING_TESTS, "stg_bronze__game_events"))
    slice_columns = columns_yml(tested([*names, *_SLICE_ONLY], _SLICE_TESTS, "stg_bronze__new_events"))
    return f"# {FROM_CONTRACT}\n{_STAGING_HEAD}{columns}{_SLICE_HEAD}{slice_columns}"


def source_yml(contract: Contract) -> str:
    columns = "".join(
        f"          - name: {c.bronze}\n            description: {yaml_str(c.bronze_doc)}\n"
        for c in contract.columns
    )
    return f"# {FROM_CONTRACT}\n{_SOURCE_HEAD}{columns}"


_STAGING_HEAD = """version: 2

models:
  - name: stg_bronze__game_events
    description: >
      Bronze in house style, one row per bronze row: renamed, cast to fixed types, with
      typed nulls for event schema versions that have not landed yet, and unknown (newer)
      bronze columns passed through. The only model that reads source(). A view,
      re-created each run so it follows bronze's schema.
    columns:
"""

_SLICE_HEAD = """  - name: stg_bronze__new_events
    description: >
      The bronze rows new to silver: staged like stg_bronze__game_events, read once per build
      from bronze's change data feed (the Delta versions after the oldest fresh mark of the
      silver tables and quarantine), each with the bronze_version that landed it. Every
      silver model reads its game's partition of it. One bounds row (bronze_version null)
      holds the versions the slice covers. A table, rebuilt each build. See "The incremental
      contract" in doc/DESIGN.md.
    columns:
"""

_SOURCE_HEAD = """version: 2

sources:
  - name: bronze
    description: >
      The Delta tables the ingest service lands from Kafka. dbt does not write them;
      on-run-start (register_bronze_source) registers their location in the metastore.
    schema: bronze
    tables:
      - name: game_events
        description: >
          Every decoded game event, one row per Kafka message, in the union of all event
          schema versions seen so far (columns of a version appear when its first message
          lands; older rows hold null there). Partitioned by event_date.
        loaded_at_field: _ingested_at
        config:
          freshness:
            warn_after: {count: 1, period: hour}
            error_after: {count: 24, period: hour}
        columns:
"""
