"""The service's Kafka consumer: created from the settings, checked before use, errors classified."""

from __future__ import annotations

from collections.abc import Callable

from confluent_kafka import Consumer, KafkaError, KafkaException

from ingest.core.errors import ConfigError, IngestError
from ingest.core.json_log import log_event
from ingest.core.kafka_config import consumer_config
from ingest.core.settings import IngestSettings


class KafkaErrors:
    """librdkafka's ``error_cb``: transport errors are logged (it retries), a fatal one is kept."""

    def __init__(self) -> None:
        self.fatal: IngestError | None = None

    def __call__(self, err: KafkaError) -> None:
        if err.code() in (KafkaError._ALL_BROKERS_DOWN, KafkaError._TRANSPORT):
            log_event("kafka_unreachable", error=err.str())
        elif err.fatal():
            self.fatal = IngestError(f"Kafka fatal error: {err.str()}")
        else:
            log_event("kafka_error", error=err.str())


def open_consumer(settings: IngestSettings, on_error: Callable[[KafkaError], None]) -> Consumer:
    """A consumer that reached the cluster and found every topic; ConfigError otherwise."""
    consumer = Consumer({**consumer_config(settings), "error_cb": on_error})
    try:
        metadata = consumer.list_topics(timeout=15)
    except KafkaException as err:
        consumer.close()
        raise ConfigError(
            f"Kafka at {settings.bootstrap_servers} did not answer within 15 s "
            f"({err.args[0].str()}); "
            "check bootstrap_servers and the security settings"
        ) from None
    missing = [t for t in settings.topics if t not in metadata.topics]
    if missing:
        consumer.close()
        raise ConfigError(f"topic(s) {missing} do not exist on {settings.bootstrap_servers}")
    return consumer
