"""The service's Kafka consumer: created from the settings, checked before use, errors classified.

A wrong SASL password or a broker certificate the CA does not vouch for fails the start within
seconds, as one line that names the settings to fix, instead of librdkafka retrying forever.
"""

from __future__ import annotations

import logging
import time

from confluent_kafka import Consumer, KafkaError, KafkaException

from ingest.core.errors import ConfigError, IngestError
from ingest.core.logs.json_log import log_event
from ingest.core.logs.librdkafka import librdkafka_logger, repeat_filter
from ingest.core.settings.ingest_settings import IngestSettings
from ingest.core.settings.kafka_config import consumer_config

# A cluster that has not answered in 8 s is down or wrong; an operator hears it in under 10 s.
CONNECT_TIMEOUT_S = 8.0
REPEAT_S = 60.0


class KafkaErrors:
    """librdkafka's ``error_cb``: transport errors are logged (it retries), auth and fatal ones kept."""

    def __init__(self) -> None:
        self.fatal: IngestError | None = None
        self.authentication: str | None = None
        self.tls: str | None = None
        self.quiet = False  # the start-up check reports refusals itself, in one line
        self._logged: dict[str, float] = {}

    def __call__(self, err: KafkaError) -> None:
        if err.code() == KafkaError._AUTHENTICATION:
            self.authentication = err.str()
            self._log("kafka_authentication_failed", logging.ERROR, err)
        elif err.code() == KafkaError._SSL:
            self.tls = err.str()
            self._log("kafka_tls_failed", logging.ERROR, err)
        elif err.code() in (KafkaError._ALL_BROKERS_DOWN, KafkaError._TRANSPORT):
            self._log("kafka_unreachable", logging.WARNING, err)
        elif err.fatal():
            self.fatal = IngestError(f"Kafka fatal error: {err.str()}")
        else:
            self._log("kafka_error", logging.WARNING, err)

    def _log(self, kind: str, level: int, err: KafkaError) -> None:
        """Once a minute per kind: librdkafka reports the same outage on every reconnect."""
        if self.quiet or time.monotonic() - self._logged.get(kind, -REPEAT_S) < REPEAT_S:
            return
        self._logged[kind] = time.monotonic()
        log_event(kind, level, error=err.str())


def open_consumer(
    settings: IngestSettings, errors: KafkaErrors, extra: dict[str, object] | None = None
) -> Consumer:
    """A consumer that reached the cluster and found every topic; ConfigError otherwise.

    ``extra`` adds to or overrides librdkafka settings (``ingest status`` reads with a group of its own).
    """
    config = {**consumer_config(settings), **(extra or {})}
    consumer = Consumer({**config, "error_cb": errors, "logger": librdkafka_logger()})
    # At DEBUG an operator wants librdkafka's own account; otherwise the check's one line says it.
    errors.quiet = repeat_filter().muted = settings.log_level != "DEBUG"
    try:
        topics = _topics(consumer, settings, errors)
    except ConfigError:
        consumer.close()
        raise
    finally:
        errors.quiet = repeat_filter().muted = False
    missing = [t for t in settings.topics if t not in topics]
    if missing:
        consumer.close()
        raise ConfigError(
            f"topic(s) {missing} do not exist on {settings.bootstrap_servers}: check topics "
            "(GAMELAKE_INGEST_TOPICS, --topic) for a typo, or create the topic"
        )
    return consumer


def _topics(consumer: Consumer, settings: IngestSettings, errors: KafkaErrors) -> set[str]:
    """The cluster's topics, asked in short rounds so an auth or TLS failure stops the wait early."""
    deadline = time.monotonic() + CONNECT_TIMEOUT_S
    while True:
        try:
            return set(consumer.list_topics(timeout=1.0).topics)
        except KafkaException as err:
            last = err.args[0].str()
        consumer.poll(0)  # serves error_cb and the log queue
        _raise_if_refused(settings, errors)
        if time.monotonic() >= deadline:
            raise ConfigError(
                f"Kafka at {settings.bootstrap_servers} did not answer within {CONNECT_TIMEOUT_S:.0f} s "
                f"({last}); check bootstrap_servers and the security settings"
            )


def _raise_if_refused(settings: IngestSettings, errors: KafkaErrors) -> None:
    where = f"Kafka at {settings.bootstrap_servers}"
    if errors.authentication is not None:
        raise ConfigError(
            f"{where} refused the SASL login of sasl_username {settings.sasl_username!r} "
            f"({errors.authentication.split(': ')[-1]}): check sasl_username and sasl_password "
            "(GAMELAKE_INGEST_SASL_USERNAME, GAMELAKE_INGEST_SASL_PASSWORD) and sasl_mechanism"
        )
    if errors.tls is not None:
        raise ConfigError(
            f"TLS with {where} failed ({errors.tls.split(': ', 1)[-1]}): check that ssl_ca_location "
            f"({settings.ssl_ca_location or 'the system CAs'}) holds the CA that signed the brokers' "
            "certificate, and that security_protocol is right"
        )
