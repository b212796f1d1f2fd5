"""The interface the producer, the ingest service and the tests share: where Kafka and the registry are.

Conventional environment variables, with defaults that point at the local stack.
"""

from __future__ import annotations

import os
from dataclasses import dataclass

DEFAULT_BOOTSTRAP_SERVERS = "localhost:9092"
DEFAULT_REGISTRY_URL = "http://localhost:8081/apis/ccompat/v7"
DEFAULT_TOPIC = "game-events"


@dataclass(frozen=True)
class Endpoints:
    bootstrap_servers: str = DEFAULT_BOOTSTRAP_SERVERS
    registry_url: str = DEFAULT_REGISTRY_URL
    topic: str = DEFAULT_TOPIC

    @classmethod
    def from_env(cls) -> Endpoints:
        return cls(
            bootstrap_servers=os.environ.get("KAFKA_BOOTSTRAP_SERVERS", DEFAULT_BOOTSTRAP_SERVERS),
            registry_url=os.environ.get("SCHEMA_REGISTRY_URL", DEFAULT_REGISTRY_URL),
            topic=os.environ.get("INGEST_TOPIC", DEFAULT_TOPIC),
        )

    @property
    def value_subject(self) -> str:
        """The registry subject of the topic's values (Confluent's TopicNameStrategy)."""
        return f"{self.topic}-value"
