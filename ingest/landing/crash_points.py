"""Named points in the landing path where crash tests stop, pause or slow the service (or
``ingest dlq replay``, which writes its files through the same writer).

Production never sets ``GAMELAKE_TEST_HOOKS``; then ``reach`` is one dict lookup. The value
is a comma-separated list of actions:

    kill@<point>[:<n>]        SIGKILL this process the n-th time (default 1st) it reaches <point>
    sleep@<point>:<s>[:<n>]   sleep s seconds at the n-th arrival (a write that outlasts the poll interval)
    pause@<point>:<s>[:<n>]   like sleep, but first touch ``$GAMELAKE_TEST_HOOK_DIR/<point>.paused``
    kill-after:<s>            SIGKILL after s seconds from start (random kill points)

Points: ``decoded`` (before any write), ``files_written`` (parquet written, not committed),
``dead_letters_written``, ``delta_committed`` (Delta commit done, Kafka commit not yet),
``compacting`` (in the compaction process, holding the lock, before OPTIMIZE).
"""

from __future__ import annotations

import os
import signal
import threading
import time
from collections import Counter
from pathlib import Path

POINTS = ("decoded", "files_written", "dead_letters_written", "delta_committed", "compacting")
_ACTIONS: dict[str, list[tuple[str, float, int]]] = {}
_SEEN: Counter[str] = Counter()


def install(spec: str | None = None) -> None:
    """Read the hook spec (default: the environment) and arm the kill timer if asked."""
    spec = os.environ.get("GAMELAKE_TEST_HOOKS", "") if spec is None else spec
    _ACTIONS.clear()
    _SEEN.clear()
    for item in filter(None, (part.strip() for part in spec.split(","))):
        if item.startswith("kill-after:"):
            delay = float(item.split(":", 1)[1])
            timer = threading.Timer(delay, os.kill, (os.getpid(), signal.SIGKILL))
            timer.daemon = True
            timer.start()
            continue
        action, _, rest = item.partition("@")
        point, *args = rest.split(":")
        if point not in POINTS or action not in ("kill", "sleep", "pause"):
            raise ValueError(f"bad test hook {item!r}")
        seconds = float(args[0]) if action != "kill" and args else 0.0
        nth = int(args[-1]) if (action == "kill" and args) or len(args) > 1 else 1
        _ACTIONS.setdefault(point, []).append((action, seconds, nth))


def reach(point: str) -> None:
    actions = _ACTIONS.get(point)
    if not actions:
        return
    _SEEN[point] += 1
    for action, seconds, nth in actions:
        if _SEEN[point] != nth:
            continue
        if action == "kill":
            os.kill(os.getpid(), signal.SIGKILL)
        if action == "pause":
            marker_dir = Path(os.environ.get("GAMELAKE_TEST_HOOK_DIR", "."))
            (marker_dir / f"{point}.paused").touch()
        time.sleep(seconds)
