"""The schema guard: a new schema may only add columns to bronze.

Bronze holds every message type of its topics in one table, so a column name is shared by every
type that has a field of that name, while field numbers belong to one message type. Bronze
remembers each column's type (its schema) and, per message type, the number of each of its
fields (a table property per type). A schema passes when each field of its message type

* is not named like one of the service's own columns (``_kafka_*``, ``event_date``...);
* has the type of the column of its name, if bronze has one, whichever message type added it;
* keeps the number its type had under that name, and takes no number its type had under
  another name (a rename or a reused number would silently split or mix a column).
"""

from __future__ import annotations

from dataclasses import dataclass, field

import pyarrow as pa

from ingest.landing.bronze_columns import RESERVED_NAMES, FieldColumn, type_name

FieldNumbers = dict[str, dict[str, int]]  # message type full name -> {field name: number}


@dataclass(frozen=True)
class KnownColumn:
    name: str
    arrow_type: pa.DataType


@dataclass
class ColumnRegistry:
    """Columns and field numbers known to bronze, plus those accepted earlier in the same batch."""

    columns: dict[str, KnownColumn] = field(default_factory=dict)
    numbers: FieldNumbers = field(default_factory=dict)

    def __post_init__(self) -> None:
        self._recorded = {name: dict(fields) for name, fields in self.numbers.items()}

    def violations(self, message_type: str, fields: list[FieldColumn]) -> list[str]:
        """Why ``fields`` of ``message_type`` cannot land in bronze; empty when they can."""
        problems = []
        numbers = self.numbers.get(message_type, {})
        names = {number: name for name, number in numbers.items()}
        for f in fields:
            if f.name in RESERVED_NAMES:
                problems.append(
                    f"field {f.name!r} (#{f.number}) uses a name reserved for the service's columns"
                )
                continue
            known = self.columns.get(f.name)
            if known is not None and known.arrow_type != f.arrow_type:
                problems.append(self._type_clash(message_type, f, known))
            number = numbers.get(f.name)
            if number is not None and number != f.number:
                problems.append(
                    f"field {f.name!r} was #{number} in bronze, the schema numbers it #{f.number}"
                )
            reused = names.get(f.number)
            if reused is not None and reused != f.name:
                problems.append(
                    f"field number #{f.number} is reused: bronze has it as {reused!r}, now {f.name!r}"
                )
        return problems

    def _type_clash(self, message_type: str, f: FieldColumn, known: KnownColumn) -> str:
        others = sorted(t for t, fields in self.numbers.items() if f.name in fields and t != message_type)
        if f.name in self.numbers.get(message_type, {}) or not others:
            return (
                f"field {f.name!r} changed type: bronze has {type_name(known.arrow_type)}, "
                f"the schema has {type_name(f.arrow_type)}"
            )
        return (
            f"field {f.name!r} of {message_type} is {type_name(f.arrow_type)}, but bronze's column "
            f"{f.name!r} is {type_name(known.arrow_type)} (from {', '.join(others)}): one column "
            "has one type across the message types of a table"
        )

    def accept(self, message_type: str, fields: list[FieldColumn]) -> list[FieldColumn]:
        """Record ``fields`` of ``message_type`` (already checked); returns those that are new columns."""
        new = [f for f in fields if f.name not in self.columns]
        for f in new:
            self.columns[f.name] = KnownColumn(f.name, f.arrow_type)
        numbers = self.numbers.setdefault(message_type, {})
        numbers.update({f.name: f.number for f in fields})
        return new

    def unrecorded(self) -> FieldNumbers:
        """The field numbers of each message type whose numbers bronze does not hold yet (all of them)."""
        return {t: dict(fields) for t, fields in self.numbers.items() if self._recorded.get(t) != fields}
