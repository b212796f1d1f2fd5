"""One root exception for gamelake, with specific subclasses.

Errors that concern one Kafka message carry its coordinates, so a log line or a
dead letter always says ``topic[partition]@offset``.
"""

from __future__ import annotations


class IngestError(Exception):
    """Root of every error gamelake raises on purpose."""


class ConfigError(IngestError):
    """Bad configuration or arguments: the message names the input and the fix."""


class StackError(IngestError):
    """The local stack could not start or answer: the message names the cause and the log file."""


class MessageError(IngestError):
    """A Kafka message that could not be landed. ``stage`` says which step failed."""

    stage = "unknown"

    def __init__(self, reason: str, *, topic: str = "", partition: int = -1, offset: int = -1) -> None:
        self.reason = reason
        self.topic = topic
        self.partition = partition
        self.offset = offset
        super().__init__(f"{self.coordinates}: {reason}" if topic else reason)

    @property
    def coordinates(self) -> str:
        return f"{self.topic}[{self.partition}]@{self.offset}"


class FramingError(MessageError):
    """The value is not in the Confluent wire format (null, empty, short, bad magic byte)."""

    stage = "framing"


class SchemaLookupError(MessageError):
    """The schema id could not be resolved through the registry, even after retries."""

    stage = "schema_lookup"


class SchemaBuildError(MessageError):
    """The registry returned the schema, but it cannot be built (a missing import, a bad descriptor)."""

    stage = "schema_build"


class DecodeError(MessageError):
    """The protobuf payload is truncated or invalid for the schema its id names."""

    stage = "decode"


class SchemaGuardError(MessageError):
    """The schema would change bronze incompatibly (a field changed type or a number was reused)."""

    stage = "schema_guard"


# Every stage a message can fail at: the dead-letter and decode-error metrics start at 0 for each.
MESSAGE_STAGES = tuple(
    error.stage
    for error in (FramingError, SchemaLookupError, SchemaBuildError, DecodeError, SchemaGuardError)
)
