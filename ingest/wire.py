"""The Confluent Schema Registry wire format for protobuf values.

byte 0      magic byte, always 0
bytes 1-4   schema id, big-endian unsigned
bytes 5..   message indexes: a zigzag varint count, then that many zigzag varints
            (the path of the message type inside the .proto file); the single
            byte 0 is the common shorthand for [0], the first message
rest        the protobuf payload
"""

from __future__ import annotations

from dataclasses import dataclass

from ingest.errors import FramingError

MAGIC_BYTE = 0
HEADER_SIZE = 5
FIRST_MESSAGE = (0,)


@dataclass(frozen=True, slots=True)
class Frame:
    schema_id: int
    message_indexes: tuple[int, ...]
    payload_start: int


def _read_varint(data: bytes, pos: int) -> tuple[int, int]:
    """A zigzag varint at ``pos``: (value, next position)."""
    shift = 0
    raw = 0
    while True:
        if pos >= len(data):
            raise FramingError("message indexes run past the end of the value")
        byte = data[pos]
        pos += 1
        raw |= (byte & 0x7F) << shift
        if not byte & 0x80:
            return (raw >> 1) ^ -(raw & 1), pos
        shift += 7
        if shift > 63:
            raise FramingError("a message-index varint is longer than 10 bytes")


def parse(value: bytes | None) -> Frame:
    """Split a framed value; raises FramingError for null, short or foreign values."""
    if value is None:
        raise FramingError("the value is null (a tombstone); there is no event to land")
    if len(value) < HEADER_SIZE + 1:
        raise FramingError(f"the value has {len(value)} bytes; a framed event needs at least 6")
    if value[0] != MAGIC_BYTE:
        raise FramingError(f"magic byte is {value[0]:#04x}, expected 0x00: not Schema Registry framing")
    schema_id = int.from_bytes(value[1:5], "big")
    if value[5] == 0:  # the shorthand for [0]: by far the most common case
        return Frame(schema_id, FIRST_MESSAGE, HEADER_SIZE + 1)
    count, pos = _read_varint(value, HEADER_SIZE)
    if count < 0 or count > 64:
        raise FramingError(f"message-index count {count} is not plausible")
    indexes = []
    for _ in range(count):
        index, pos = _read_varint(value, pos)
        if index < 0:
            raise FramingError(f"message index {index} is negative")
        indexes.append(index)
    return Frame(schema_id, tuple(indexes), pos)


def _write_varint(value: int) -> bytes:
    raw = (value << 1) ^ (value >> 63)
    out = bytearray()
    while True:
        if raw < 0x80:
            out.append(raw)
            return bytes(out)
        out.append((raw & 0x7F) | 0x80)
        raw >>= 7


def frame(schema_id: int, payload: bytes, message_indexes: tuple[int, ...] = FIRST_MESSAGE) -> bytes:
    """Frame ``payload`` (used by dead-letter replay tests and the benchmark)."""
    if message_indexes == FIRST_MESSAGE:
        indexes = b"\x00"
    else:
        indexes = _write_varint(len(message_indexes)) + b"".join(_write_varint(i) for i in message_indexes)
    return bytes([MAGIC_BYTE]) + schema_id.to_bytes(4, "big") + indexes + payload
