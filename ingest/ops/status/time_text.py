"""How status writes times: instants in UTC ISO 8601 to the second, durations for people."""

from __future__ import annotations

import time

_UNITS = (("d", 86_400), ("h", 3_600), ("min", 60), ("s", 1))


def iso_utc(epoch_s: float | None) -> str | None:
    return None if epoch_s is None else time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(epoch_s))


def human_duration(seconds: float | None) -> str:
    """``0 s``, ``42 s``, ``3 min``, ``2 h 5 min``, ``3 d 4 h``: at most two units, rounded down."""
    if seconds is None:
        return "-"
    whole = max(0, int(seconds))
    if whole < 60:
        return f"{whole} s"
    largest = next(i for i, (_, size) in enumerate(_UNITS) if whole >= size)
    (unit, size), (smaller, smaller_size) = _UNITS[largest], _UNITS[largest + 1]
    text, rest = f"{whole // size} {unit}", whole % size // smaller_size
    return f"{text} {rest} {smaller}" if rest and smaller != "s" else text
