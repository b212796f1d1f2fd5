"""What a protobuf event must land as in bronze: shared by the unit and integration tests."""

from __future__ import annotations

import datetime as dt

from google.protobuf.message import Message

from ingest.landing.decode.bronze_columns import field_column


def expected_row(event: Message, columns: list[str]) -> dict[str, object]:
    """``event`` as a bronze row over ``columns``: each of its fields as sent, NULL elsewhere.

    NULL for the columns of other message types and for an unset Timestamp; other unset proto3
    fields read as their default, which is what the producer's reader would see too.
    """
    fields = {f.name: f for f in event.DESCRIPTOR.fields}
    row: dict[str, object] = {"_message_type": event.DESCRIPTOR.full_name}
    for name in columns:
        f = fields.get(name)
        if f is None:
            row[name] = None
        elif field_column(f).kind == "timestamp":
            row[name] = getattr(event, name).ToDatetime(dt.UTC) if event.HasField(name) else None
        else:
            row[name] = getattr(event, name)
    return row
