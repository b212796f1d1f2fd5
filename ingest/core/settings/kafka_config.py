"""librdkafka configuration from the settings: security first, then the service's own keys.

One precedence rule for a librdkafka property that both a typed setting and the ``kafka``
passthrough can set (``security.protocol``, ``sasl.*``, ``ssl.*``): the explicit one wins. A
passthrough key replaces a typed setting left at its default; naming the property both ways
is refused when the settings load (ingest_settings.py), naming both. Secrets are unwrapped here and
only handed to librdkafka.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from pydantic import SecretStr

from ingest.core.settings.ingest_settings import KAFKA_ALIASES, TYPED_KAFKA_PROPERTIES, IngestSettings

_SECURITY_PREFIXES = ("security.", "sasl.", "ssl.")


def _plain(value: str | Path | SecretStr) -> str:
    return value.get_secret_value() if isinstance(value, SecretStr) else str(value)


def passthrough(settings: IngestSettings) -> dict[str, str]:
    """The ``kafka`` passthrough, secrets unwrapped."""
    return {key: _plain(value) for key, value in settings.kafka.items()}


def security_config(settings: IngestSettings) -> dict[str, str]:
    """security.protocol, sasl.* and ssl.*: typed settings, replaced by passthrough keys that name them."""
    passed = {KAFKA_ALIASES.get(key, key) for key in settings.kafka}
    conf = {
        key: _plain(value)
        for key, field in TYPED_KAFKA_PROPERTIES.items()
        if (value := getattr(settings, field)) is not None and key not in passed
    }
    return conf | {k: v for k, v in passthrough(settings).items() if k.startswith(_SECURITY_PREFIXES)}


def consumer_config(settings: IngestSettings) -> dict[str, Any]:
    return {
        **passthrough(settings),
        **security_config(settings),
        "bootstrap.servers": settings.bootstrap_servers,
        "group.id": settings.group_id,
        # Offsets live in Delta; Kafka's committed offsets only mirror them for lag monitoring.
        "enable.auto.commit": False,
        "enable.auto.offset.store": False,
        # Never jump silently: an out-of-range position is an error the service reports.
        "auto.offset.reset": "error",
        "session.timeout.ms": settings.session_timeout_ms,
        "max.poll.interval.ms": settings.max_poll_interval_ms,
    }


def producer_config(settings: IngestSettings) -> dict[str, Any]:
    """For the dead-letter topic and replays: same cluster and security, idempotent."""
    return {
        **security_config(settings),
        "bootstrap.servers": settings.bootstrap_servers,
        "enable.idempotence": True,
    }
