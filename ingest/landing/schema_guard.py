"""The schema guard: a new schema may only add columns to bronze.

Bronze remembers, per column, its type and the proto field number it came from (Delta field
metadata). A schema passes when each of its fields either matches a known column exactly
(same name, same type, same number) or is new by both name and number. It fails when:

* a known name arrives with another type (a type change);
* a known name arrives with another number, or a known number with another name (reuse);
* a field is named like one of the service's own columns (``_kafka_*``, ``event_date``...).
"""

from __future__ import annotations

from dataclasses import dataclass, field

import pyarrow as pa

from ingest.landing.bronze_columns import RESERVED_NAMES, FieldColumn, type_name


@dataclass(frozen=True)
class KnownColumn:
    name: str
    arrow_type: pa.DataType
    number: int | None  # None for columns without a recorded number


@dataclass
class ColumnRegistry:
    """Columns known to bronze plus those accepted earlier in the same batch."""

    columns: dict[str, KnownColumn] = field(default_factory=dict)

    def by_number(self) -> dict[int, KnownColumn]:
        return {c.number: c for c in self.columns.values() if c.number is not None}

    def violations(self, fields: list[FieldColumn]) -> list[str]:
        """Why ``fields`` cannot land in bronze; empty when they can."""
        problems = []
        numbers = self.by_number()
        for f in fields:
            if f.name in RESERVED_NAMES:
                problems.append(
                    f"field {f.name!r} (#{f.number}) uses a name reserved for the service's columns"
                )
                continue
            known = self.columns.get(f.name)
            if known is not None and known.arrow_type != f.arrow_type:
                problems.append(
                    f"field {f.name!r} changed type: bronze has {type_name(known.arrow_type)}, "
                    f"the schema has {type_name(f.arrow_type)}"
                )
            if known is not None and known.number is not None and known.number != f.number:
                problems.append(
                    f"field {f.name!r} was #{known.number} in bronze, the schema numbers it #{f.number}"
                )
            reused = numbers.get(f.number)
            if reused is not None and reused.name != f.name:
                problems.append(
                    f"field number #{f.number} is reused: bronze has it as {reused.name!r}, now {f.name!r}"
                )
        return problems

    def accept(self, fields: list[FieldColumn]) -> list[FieldColumn]:
        """Record ``fields`` (already checked); returns those that are new columns."""
        new = [f for f in fields if f.name not in self.columns]
        for f in new:
            self.columns[f.name] = KnownColumn(f.name, f.arrow_type, f.number)
        return new
