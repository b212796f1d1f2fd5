"""Settings (precedence, secrets, clear errors) and the Confluent wire format, without services."""

from __future__ import annotations

import pytest

from ingest.core.errors import ConfigError, FramingError
from ingest.core.settings import load_settings
from ingest.landing import wire_format as wire


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
    assert settings.consumer_config()["sasl.password"] == "hunter2"
    monkeypatch.setenv("GAMELAKE_INGEST_FLUSH_ROWS", "lots")
    with pytest.raises(ConfigError) as err:
        load_settings()
    assert "flush_rows" in str(err.value) and "hunter2" not in str(err.value)


def test_librdkafka_settings_pass_through_but_cannot_break_exactly_once():
    settings = load_settings(kafka={"fetch.min.bytes": "1024"})
    assert settings.consumer_config()["fetch.min.bytes"] == "1024"
    assert settings.consumer_config()["enable.auto.commit"] is False
    with pytest.raises(ConfigError, match=r"enable\.auto\.commit"):
        load_settings(kafka={"enable.auto.commit": "true"})


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
