"""SCRAM users of the local broker's SASL_SSL listener, created through its loopback admin listener."""

from __future__ import annotations

from confluent_kafka.admin import (
    AdminClient,
    ScramCredentialInfo,
    ScramMechanism,
    UserScramCredentialUpsertion,
)

from ingest.core.errors import StackError

ITERATIONS = 8192


def add_scram_user(bootstrap_servers: str, user: str, password: str) -> None:
    """Create or replace ``user``'s SCRAM-SHA-512 credential."""
    admin = AdminClient({"bootstrap.servers": bootstrap_servers})
    upsert = UserScramCredentialUpsertion(
        user, ScramCredentialInfo(ScramMechanism.SCRAM_SHA_512, ITERATIONS), password.encode()
    )
    for future in admin.alter_user_scram_credentials([upsert]).values():
        try:
            future.result(timeout=30)
        except Exception as err:  # the admin client raises KafkaException or its own errors
            raise StackError(f"could not set the SCRAM credential of {user!r}: {err}") from None
