"""Appending one dated section, with the machine it ran on, to a results file under bench/results."""

from __future__ import annotations

import datetime as dt
import os
import platform
from pathlib import Path


def machine_line() -> str:
    load = " / ".join(f"{x:.1f}" for x in os.getloadavg())
    return (
        f"- machine: {platform.node()}, {platform.machine()}, {os.cpu_count()} cores, "
        f"Python {platform.python_version()}, load average {load}"
    )


def append_section(path: Path, title: str, body: list[str], heading: str = "") -> None:
    """Print and append ``## title, date`` then the machine and ``body``; ``heading`` starts a new file."""
    lines = [f"\n## {title}, {dt.datetime.now(dt.UTC):%Y-%m-%d %H:%M} UTC", machine_line(), *body]
    path.parent.mkdir(parents=True, exist_ok=True)
    if heading and not path.exists():
        path.write_text(heading)
    with open(path, "a") as out:
        out.write("\n".join(lines) + "\n")
    print("\n".join(lines))
