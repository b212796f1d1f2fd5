"""Settings (precedence, secrets, clear errors) and the Confluent wire format, without services."""

from __future__ import annotations

import pytest

from ingest.core.errors import ConfigError, FramingError
from ingest.core.settings.ingest_settings import load_settings
from ingest.core.settings.kafka_config import consumer_config, producer_config
from ingest.landing.decode import wire_format as wire


def test_flags_win_over_environment_which_wins_over_the_file(tmp_path, monkeypatch):
    config = tmp_path / "ingest.toml"
    config.write_text('group_id = "from-file"\nflush_rows = 10\ntopics = ["file-topic"]\n')
    monkeypatch.setenv("GAMELAKE_INGEST_FLUSH_ROWS", "20")
    monkeypatch.setenv("GAMELAKE_INGEST_GROUP_ID", "from-env")
    settings = load_settings(config, group_id="from-flag")
    assert (settings.group_id, settings.flush_rows, settings.topics) == ("from-flag", 20, ["file-topic"])


def test_secrets_never_show_in_repr_or_errors(monkeypatch):
    monkeypatch.setenv("GAMELAKE_INGEST_SASL_PASSWORD", "hunter2")
    monkeypatch.setenv("GAMELAKE_INGEST_REGISTRY_BEARER_TOKEN", "tok-123")
    settings = load_settings()
    assert "hunter2" not in repr(settings) and "tok-123" not in repr(settings)
    assert "hunter2" not in settings.model_dump_json()
    assert consumer_config(settings)["sasl.password"] == "hunter2"
    monkeypatch.setenv("GAMELAKE_INGEST_FLUSH_ROWS", "lots")
    with pytest.raises(ConfigError) as err:
        load_settings()
    assert "GAMELAKE_INGEST_FLUSH_ROWS='lots'" in str(err.value) and "hunter2" not in str(err.value)


def test_librdkafka_settings_pass_through_but_cannot_break_exactly_once():
    settings = load_settings(kafka={"fetch.min.bytes": "1024"})
    assert consumer_config(settings)["fetch.min.bytes"] == "1024"
    assert consumer_config(settings)["enable.auto.commit"] is False
    with pytest.raises(ConfigError, match=r"enable\.auto\.commit"):
        load_settings(kafka={"enable.auto.commit": "true"})


SECURITY_PROPERTIES = [  # (librdkafka property, typed setting, a value)
    ("security.protocol", "security_protocol", "sasl_ssl"),
    ("sasl.mechanism", "sasl_mechanism", "SCRAM-SHA-512"),
    ("sasl.username", "sasl_username", "studio"),
    ("sasl.password", "sasl_password", "pw-typed"),
    ("ssl.ca.location", "ssl_ca_location", "/etc/ca.pem"),
    ("ssl.certificate.location", "ssl_certificate_location", "/etc/client.pem"),
    ("ssl.key.location", "ssl_key_location", "/etc/client.key"),
    ("ssl.key.password", "ssl_key_password", "key-pw"),
]


@pytest.mark.parametrize(("key", "field", "value"), SECURITY_PROPERTIES)
def test_a_passthrough_security_property_wins_over_the_typed_default_for_consumer_and_producer(
    key, field, value
):
    typed = load_settings(**{field: value})
    assert consumer_config(typed)[key] == value and producer_config(typed)[key] == value
    passed = load_settings(kafka={key: "from-passthrough"})
    assert consumer_config(passed)[key] == "from-passthrough"
    assert producer_config(passed)[key] == "from-passthrough"


@pytest.mark.parametrize(("key", "field", "value"), SECURITY_PROPERTIES)
def test_a_security_property_set_both_ways_is_refused_naming_both(key, field, value, monkeypatch):
    monkeypatch.setenv(f"GAMELAKE_INGEST_{field.upper()}", value)
    with pytest.raises(ConfigError) as err:
        load_settings(kafka={key: "other"})
    assert f"{key!r} is set twice" in str(err.value) and field in str(err.value)
    assert "pw-typed" not in str(err.value) and "key-pw" not in str(err.value)


def test_the_librdkafka_way_of_configuring_sasl_is_not_silently_overridden():
    passed = {
        "security.protocol": "SASL_PLAINTEXT",
        "sasl.mechanisms": "PLAIN",
        "sasl.username": "u",
        "sasl.password": "pw-in-passthrough",
    }
    conf = consumer_config(load_settings(kafka=passed))
    assert conf["security.protocol"] == "SASL_PLAINTEXT" and conf["sasl.mechanisms"] == "PLAIN"
    assert "sasl.mechanism" not in conf and conf["sasl.password"] == "pw-in-passthrough"
    assert "pw-in-passthrough" not in repr(load_settings(kafka=passed))
    with pytest.raises(ConfigError, match=r"'sasl\.mechanism' is set twice"):
        load_settings(kafka={"sasl.mechanism": "PLAIN", "sasl.mechanisms": "PLAIN"})


@pytest.mark.parametrize(
    ("env", "value", "field", "expected"),
    [
        ("SECURITY_PROTOCOL", "SASL_SSL", "security_protocol", "sasl_ssl"),
        ("SECURITY_PROTOCOL", "Sasl_Plaintext", "security_protocol", "sasl_plaintext"),
        ("DEAD_LETTER_SINK", "DELTA", "dead_letter_sink", "delta"),
        ("ON_EXPIRED_OFFSET", "Earliest", "on_expired_offset", "earliest"),
        ("LOG_LEVEL", "debug", "log_level", "DEBUG"),
    ],
)
def test_enumerated_values_accept_any_case(env, value, field, expected, monkeypatch):
    monkeypatch.setenv(f"GAMELAKE_INGEST_{env}", value)
    assert getattr(load_settings(), field) == expected


def test_topic_sink_needs_a_topic_and_auth_is_one_kind():
    with pytest.raises(ConfigError, match="dead_letter_topic"):
        load_settings(dead_letter_sink="topic")
    with pytest.raises(ConfigError, match="not both"):
        load_settings(registry_username="u", registry_bearer_token="t")


@pytest.mark.parametrize("indexes", [(0,), (1,), (0, 2), (3, 1, 70)])
def test_frames_round_trip_with_message_indexes(indexes):
    framed = wire.frame(4242, b"payload", indexes)
    parsed = wire.parse(framed)
    assert (parsed.schema_id, parsed.message_indexes) == (4242, indexes)
    assert framed[parsed.payload_start :] == b"payload"


def test_the_zero_byte_is_the_shorthand_for_the_first_message():
    assert wire.frame(7, b"x") == b"\x00\x00\x00\x00\x07\x00x"


@pytest.mark.parametrize(
    ("value", "reason"),
    [
        (None, "null"),
        (b"", "0 bytes"),
        (b"\x00\x00\x01", "3 bytes"),
        (b"\x07" + b"\x00" * 8, "magic byte is 0x07"),
    ],
)
def test_foreign_values_are_framing_errors(value, reason):
    with pytest.raises(FramingError, match=reason):
        wire.parse(value)


def test_a_cut_message_index_is_a_framing_error():
    with pytest.raises(FramingError, match="past the end"):
        wire.parse(b"\x00\x00\x00\x00\x01\x04\x82")
