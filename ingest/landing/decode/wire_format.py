"""The Confluent Schema Registry wire format for protobuf values.

byte 0      magic byte, always 0
bytes 1-4   schema id, big-endian unsigned
bytes 5..   message indexes: a zigzag varint count, then that many zigzag varints
            (the path of the message type inside the .proto file); the single
            byte 0 is the common shorthand for [0], the first message
rest        the protobuf payload
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

from ingest.core.errors import FramingError

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


@dataclass
class Group:
    """The values of a batch that name one (schema id, message path), with their payloads."""

    schema_id: int
    message_indexes: tuple[int, ...]
    positions: list[int] = field(default_factory=list)
    payloads: list[bytes] = field(default_factory=list)


def split(values: Sequence[bytes | None]) -> tuple[list[Group], list[tuple[int, FramingError]]]:
    """Group a batch's values by what they name, in order of first appearance; the unframed with why.

    The same result as ``parse`` on every value, but the common header (magic byte, schema id,
    the shorthand index byte 0) is recognised by its first six bytes as a whole: most values
    cost one slice and one dict lookup instead of a parse and a ``Frame`` each.
    """
    by_head: dict[bytes | None, list[int]] = {}
    for i, head in enumerate([v[:6] if v is not None else None for v in values]):
        same = by_head.get(head)
        if same is None:
            by_head[head] = [i]
        else:
            same.append(i)
    key: tuple[int, tuple[int, ...]]
    groups: dict[tuple[int, tuple[int, ...]], Group] = {}
    sources: dict[tuple[int, tuple[int, ...]], set[bytes | None]] = {}
    errors: list[tuple[int, FramingError]] = []
    for head, positions in by_head.items():
        if type(head) is bytes and len(head) == 6 and head[0] == MAGIC_BYTE and head[5] == 0:
            key = (int.from_bytes(head[1:5], "big"), FIRST_MESSAGE)
            group = groups.setdefault(key, Group(*key))
            sources.setdefault(key, set()).add(head)
            group.positions += positions
            group.payloads += [values[i][6:] for i in positions]  # type: ignore[index]
            continue
        for i in positions:  # anything else: the general parser, one value at a time
            try:
                frame = parse(values[i])
            except FramingError as err:
                errors.append((i, err))
                continue
            key = (frame.schema_id, frame.message_indexes)
            group = groups.setdefault(key, Group(*key))
            sources.setdefault(key, set()).add(head)
            group.positions.append(i)
            group.payloads.append(values[i][frame.payload_start :])  # type: ignore[index]
    for key, heads in sources.items():
        if len(heads) > 1:
            _restore_order(groups[key])
    return sorted(groups.values(), key=lambda g: g.positions[0]), errors


def _restore_order(group: Group) -> None:
    """Positions ascending, as in the batch, for a group that several headers fed."""
    order = sorted(range(len(group.positions)), key=group.positions.__getitem__)
    group.positions = [group.positions[k] for k in order]
    group.payloads = [group.payloads[k] for k in order]


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
