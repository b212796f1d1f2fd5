import pytest
from gamelake_dev.localstack.java import java_for
from gamelake_dev.localstack.stack import StackPorts

from ingest.core.errors import ConfigError, StackError


def test_missing_java_is_a_clear_error():
    with pytest.raises(StackError, match=r"needs Java 99 or newer.*point JAVA_HOME"):
        java_for("Some server", minimum=99)


def test_bad_port_variable_is_refused(monkeypatch):
    monkeypatch.setenv("KAFKA_PORT", "ninety")
    with pytest.raises(ConfigError, match="KAFKA_PORT='ninety' is not a port"):
        StackPorts.from_env()


def test_colliding_ports_are_refused(monkeypatch):
    monkeypatch.setenv("KAFKA_PORT", "8081")
    monkeypatch.setenv("SCHEMA_REGISTRY_PORT", "8081")
    with pytest.raises(ConfigError, match="ports must differ"):
        StackPorts.from_env()


def test_defaults_match_the_documented_interface(monkeypatch):
    for name in ("KAFKA_PORT", "KAFKA_CONTROLLER_PORT", "SCHEMA_REGISTRY_PORT"):
        monkeypatch.delenv(name, raising=False)
    ports = StackPorts.from_env()
    assert ports.bootstrap_servers == "localhost:9092"
    assert ports.registry_url == "http://localhost:8081/apis/ccompat/v7"
