"""The registry replaced at its boundary, for unit tests: schema id N is the demo's event schema
version N (dev/gamelake_dev/proto), any other id is unknown."""

from __future__ import annotations

from typing import Any

from gamelake_dev.demo_schemas import available_versions, load_version

from ingest.landing.decode.schema_registry import UnknownSchemaId


class DemoSchema:
    def __init__(self, version: int) -> None:
        self.descriptor = load_version(version).message_class.DESCRIPTOR

    def message(self, indexes: Any) -> Any:
        return self.descriptor


class DemoRegistry:
    def __init__(self, settings: Any = None) -> None:  # takes SchemaRegistryClient's place, settings too
        pass

    def schema(self, schema_id: int) -> DemoSchema:
        if schema_id not in available_versions():
            raise UnknownSchemaId(f"schema id {schema_id} is not registered")
        return DemoSchema(schema_id)
