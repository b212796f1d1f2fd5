"""The producer, the ingest service and the tests read the same connection variables."""

from ingest.core.settings.endpoints import Endpoints
from ingest.core.settings.ingest_settings import IngestSettings


def test_conventional_variables_reach_producer_and_service(monkeypatch):
    monkeypatch.setenv("KAFKA_BOOTSTRAP_SERVERS", "broker-a:9092,broker-b:9092")
    monkeypatch.setenv("SCHEMA_REGISTRY_URL", "https://registry.example:8081")
    monkeypatch.setenv("INGEST_TOPIC", "console-events")
    endpoints, settings = Endpoints.from_env(), IngestSettings()
    assert settings.bootstrap_servers == endpoints.bootstrap_servers == "broker-a:9092,broker-b:9092"
    assert settings.registry_url == endpoints.registry_url == "https://registry.example:8081"
    assert settings.topics == [endpoints.topic] == ["console-events"]


def test_service_specific_variables_win_over_conventional_ones(monkeypatch):
    monkeypatch.setenv("KAFKA_BOOTSTRAP_SERVERS", "shared:9092")
    monkeypatch.setenv("GAMELAKE_INGEST_BOOTSTRAP_SERVERS", "ingest-only:9092")
    assert IngestSettings().bootstrap_servers == "ingest-only:9092"


def test_defaults_point_at_the_local_stack(monkeypatch):
    for name in ("KAFKA_BOOTSTRAP_SERVERS", "SCHEMA_REGISTRY_URL", "INGEST_TOPIC"):
        monkeypatch.delenv(name, raising=False)
    settings = IngestSettings()
    assert (settings.bootstrap_servers, settings.registry_url, settings.topics) == (
        "localhost:9092",
        "http://localhost:8081/apis/ccompat/v7",
        ["game-events"],
    )
