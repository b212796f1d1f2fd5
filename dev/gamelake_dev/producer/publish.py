"""Register the schema versions and publish events, the way a real game backend would.

Serialization is confluent-kafka's own ``ProtobufSerializer``, so the bytes on the wire
are exactly the Confluent Schema Registry format: magic byte, schema id, message
indexes, protobuf payload. ``google/protobuf/timestamp.proto`` is registered as a
schema reference, as Java producers do.
"""

from __future__ import annotations

import time
from collections import Counter
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field

from confluent_kafka import KafkaError, KafkaException, Message, Producer
from confluent_kafka.admin import AdminClient, NewTopic
from confluent_kafka.schema_registry import SchemaRegistryClient, topic_subject_name_strategy
from confluent_kafka.schema_registry.error import SchemaRegistryError
from confluent_kafka.schema_registry.protobuf import ProtobufSerializer
from confluent_kafka.serialization import MessageField, SerializationContext
from tqdm import tqdm

from gamelake_dev.demo_schemas import load_version
from gamelake_dev.producer.datagen import GameEvent
from ingest.core.errors import ConfigError, IngestError
from ingest.core.settings.endpoints import Endpoints

# Each version must read every earlier version's data. (Apicurio's FULL check also flags
# "fields removed" when an older version lacks newer fields, which protobuf tolerates.)
COMPATIBILITY = "BACKWARD_TRANSITIVE"
REGISTRY_TIMEOUT_S = 30
# The classic TopicNameStrategy, named explicitly: confluent-kafka's default now first asks the
# registry for subject "associations", an API Apicurio does not serve and, seen here, can leave
# a request hanging.
SERIALIZER_CONF = {
    "auto.register.schemas": True,
    "skip.known.types": False,
    "use.deprecated.format": False,
    "subject.name.strategy": topic_subject_name_strategy,
}


@dataclass
class ProduceSummary:
    """What a run sent: counts per game and per version, and the schema id of each version."""

    schema_ids: dict[int, int]
    per_game: Counter[str] = field(default_factory=Counter)
    per_version: Counter[int] = field(default_factory=Counter)
    delivered: int = 0
    failed: int = 0
    errors: list[str] = field(default_factory=list)
    seconds: float = 0.0

    @property
    def sent(self) -> int:
        return sum(self.per_version.values())

    def render(self, games: Iterable[str] = ()) -> str:
        """The summary; each of ``games`` is listed, also one that got no events."""
        rate = self.delivered / self.seconds if self.seconds else 0.0
        lines = [
            f"produced {self.delivered} events ({self.failed} failed) in {self.seconds:.1f}s, {rate:,.0f}/s"
        ]
        listed = sorted(set(games) | self.per_game.keys())
        lines.append("  per game:    " + ", ".join(f"{g}={self.per_game[g]}" for g in listed))
        lines.append(
            "  per version: "
            + ", ".join(
                f"v{v}={n} (schema id {self.schema_ids[v]})" for v, n in sorted(self.per_version.items())
            )
        )
        lines += [f"  error: {e}" for e in self.errors[:5]]
        return "\n".join(lines)


def registry_client(endpoints: Endpoints) -> SchemaRegistryClient:
    return SchemaRegistryClient({"url": endpoints.registry_url, "timeout": REGISTRY_TIMEOUT_S})


def ensure_topic(endpoints: Endpoints, partitions: int, timeout_s: float = 30.0) -> None:
    """Create the topic with ``partitions`` unless it exists."""
    admin = AdminClient({"bootstrap.servers": endpoints.bootstrap_servers})
    futures = admin.create_topics(
        [NewTopic(endpoints.topic, num_partitions=partitions, replication_factor=1)]
    )
    try:
        futures[endpoints.topic].result(timeout=timeout_s)
    except KafkaException as err:
        if err.args[0].code() != KafkaError.TOPIC_ALREADY_EXISTS:
            raise IngestError(
                f"could not create topic {endpoints.topic!r} at {endpoints.bootstrap_servers}: {err}"
            ) from err
    except TimeoutError as err:
        raise IngestError(
            f"Kafka at {endpoints.bootstrap_servers} did not answer within {timeout_s:.0f}s: is the broker "
            f"running (make stack-up) and is KAFKA_BOOTSTRAP_SERVERS right?"
        ) from err


def register_versions(endpoints: Endpoints, versions: Iterable[int]) -> dict[int, ProtobufSerializer]:
    """Register v1..max(versions) in order under the topic's value subject; return their serializers.

    Registration goes through the serializer itself, so the registered text and
    references are exactly what every later message names.
    """
    client = registry_client(endpoints)
    try:
        client.set_compatibility(subject_name=endpoints.value_subject, level=COMPATIBILITY)
    except SchemaRegistryError as err:
        raise IngestError(
            f"registry at {endpoints.registry_url} refused the compatibility setting: {err}"
        ) from err
    ctx = SerializationContext(endpoints.topic, MessageField.VALUE)
    serializers = {}
    for number in range(1, max(versions) + 1):
        message_class = load_version(number).message_class
        serializer = ProtobufSerializer(message_class, client, SERIALIZER_CONF)
        try:
            serializer(message_class(), ctx)
        except SchemaRegistryError as err:
            raise IngestError(
                f"registering schema v{number} under {endpoints.value_subject} failed: {err}"
            ) from err
        serializers[number] = serializer
    return serializers


def schema_id_of(framed: bytes) -> int:
    """The schema id in a Confluent-framed value."""
    return int.from_bytes(framed[1:5], "big")


class _Pacer:
    """Holds a producer to ``rate`` events per second (None: unlimited)."""

    def __init__(self, rate: float | None) -> None:
        self.rate = rate
        self.started = time.monotonic()

    def wait(self, sent: int) -> None:
        if self.rate is None or sent % 50:
            return
        ahead = sent / self.rate - (time.monotonic() - self.started)
        if ahead > 0:
            time.sleep(ahead)


def publish(
    endpoints: Endpoints,
    events: Iterable[GameEvent],
    versions: list[int],
    *,
    partitions: int = 6,
    rate: float | None = None,
    total: int | None = None,
    progress: bool = True,
) -> ProduceSummary:
    """Send ``events`` keyed by gamer_id; wait until every one is acknowledged or failed."""
    ensure_topic(endpoints, partitions)
    serializers = register_versions(endpoints, versions)
    field_names = {number: load_version(number).field_names for number in serializers}
    classes = {number: load_version(number).message_class for number in serializers}
    ctx = SerializationContext(endpoints.topic, MessageField.VALUE)
    producer = Producer(
        {
            "bootstrap.servers": endpoints.bootstrap_servers,
            "enable.idempotence": True,
            "linger.ms": 20,
            "compression.type": "lz4",
        }
    )
    summary = ProduceSummary(schema_ids={})

    def delivered(err: KafkaError | None, _msg: Message) -> None:
        if err is None:
            summary.delivered += 1
        else:
            summary.failed += 1
            summary.errors.append(str(err))

    pacer = _Pacer(rate)
    started = time.monotonic()
    bar = tqdm(total=total, unit="ev", disable=not progress, mininterval=1.0, desc="produce")
    try:
        for sent, event in enumerate(events, start=1):
            value = serializers[event.version](
                classes[event.version](**event.fields(field_names[event.version])), ctx
            )
            assert value is not None
            summary.schema_ids.setdefault(event.version, schema_id_of(value))
            _produce(producer, endpoints.topic, event.gamer_id.encode(), value, delivered)
            summary.per_game[event.game_name] += 1
            summary.per_version[event.version] += 1
            bar.update(1)
            pacer.wait(sent)
    finally:
        producer.flush(60)
        bar.close()
        summary.seconds = time.monotonic() - started
    return summary


def _produce(
    producer: Producer,
    topic: str,
    key: bytes,
    value: bytes,
    on_delivery: Callable[[KafkaError | None, Message], None],
) -> None:
    while True:
        try:
            producer.produce(topic, key=key, value=value, on_delivery=on_delivery)
            producer.poll(0)
            return
        except BufferError:
            producer.poll(0.1)  # local queue full: let deliveries drain


def validate_versions(versions: list[int]) -> list[int]:
    from gamelake_dev.demo_schemas import available_versions

    known = available_versions()
    for number in versions:
        if number not in known:
            raise ConfigError(
                f"unknown schema version {number}: choose from {known} (dev/gamelake_dev/proto/v<N>)"
            )
    if not versions:
        raise ConfigError("no schema versions chosen: pass e.g. --versions 1,2,3")
    return sorted(set(versions))
