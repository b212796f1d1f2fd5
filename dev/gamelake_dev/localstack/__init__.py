"""The local stack: a real Kafka broker and a real Schema Registry on loopback."""
