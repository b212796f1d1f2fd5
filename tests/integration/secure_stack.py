"""The local stack run as a deployment runs it: producers through Kafka's SASL_SSL listener, with
the users that tests/integration/conftest.py creates (a SCRAM user, a registry user)."""

from __future__ import annotations

from collections.abc import Callable

from confluent_kafka import Producer
from confluent_kafka.serialization import MessageField, SerializationContext
from gamelake_dev.demo_schemas import load_version
from gamelake_dev.localstack.stack import StackPorts, ca_certificate
from gamelake_dev.producer.publish import register_versions

from ingest.landing.decode import wire_format

USER = "studio-ingest"
PASSWORD = "Quokka-Lantern-4417-Saffron"  # distinctive: searched for in every output
WRONG_PASSWORD = "Walrus-Ember-9902-Thistle"
REGISTRY_USER = "studio-registry"
REGISTRY_PASSWORD = "Heron-Copper-3385-Juniper"

Serializer = Callable[[object, SerializationContext], bytes]


def produce_secure(stack, topic: str, count: int, serializer: Serializer | None = None) -> list[str]:
    """Events produced through the SASL_SSL listener, then one dead letter; returns their ids.

    ``serializer`` registers the schema where the ingest will look it up (the stack's registry
    when None)."""
    serializer = serializer or register_versions(stack.endpoints(topic), [2])[2]
    producer = Producer(
        {
            "bootstrap.servers": StackPorts.from_env().sasl_ssl_bootstrap_servers,
            "security.protocol": "SASL_SSL",
            "sasl.mechanism": "SCRAM-SHA-512",
            "sasl.username": USER,
            "sasl.password": PASSWORD,
            "ssl.ca.location": str(ca_certificate()),
            "enable.idempotence": True,
        }
    )
    ctx = SerializationContext(topic, MessageField.VALUE)
    v2 = load_version(2).message_class
    ids = [f"secure-{i}" for i in range(count)]
    for i, event_id in enumerate(ids):
        value = serializer(v2(event_id=event_id, game_name="kart_legends", score=i), ctx)
        producer.produce(topic, key=b"g", value=value)
    producer.produce(topic, key=b"g", value=wire_format.frame(999_999, b"\x00"))  # a dead letter too
    assert producer.flush(30) == 0
    return ids
