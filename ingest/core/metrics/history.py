"""The last hour of a few metrics, sampled in-process for the dashboard page.

Prometheus keeps history only when someone runs one; the dashboard should show a trend without
it. A ``MetricHistory`` reads a ``CollectorRegistry`` every ``interval_s`` seconds and keeps,
per ``Panel``, one number per sample in a bounded ring buffer (720 points: an hour at 5 s).
"""

from __future__ import annotations

import logging
import threading
import time
from collections import deque
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from enum import StrEnum
from typing import Protocol

from prometheus_client.metrics_core import Metric

log = logging.getLogger("gamelake.metric_history")

Point = tuple[float, float]  # (unix time, value)


class Kind(StrEnum):
    """How a panel turns the matching samples of one scrape into its number."""

    SUM = "sum"  # the samples' sum: a gauge, or a gauge's partitions added up
    RATE = "rate"  # increase per second of the summed counter since the previous sample
    SINCE = "since"  # seconds since the timestamp the gauge holds; 0 while it is 0 (never happened)


@dataclass(frozen=True)
class Panel:
    """One plotted number: which samples to read and how to combine them."""

    title: str
    metric: str  # the sample name as /metrics shows it, e.g. gamelake_ingest_rows_landed_total
    kind: Kind = Kind.SUM
    # only samples carrying these labels; left out of the hash (a dict has none), kept in ==
    labels: Mapping[str, str] = field(default_factory=dict, hash=False)
    scale: float = 1.0  # 60 turns a per-second rate into a per-minute one
    note: str = ""  # a line under the title that says how to read it

    def matches(self, name: str, labels: Mapping[str, str]) -> bool:
        return name == self.metric and all(labels.get(k) == v for k, v in self.labels.items())


@dataclass(frozen=True)
class Series:
    """A panel and its recorded points, oldest first: what the page draws."""

    panel: Panel
    points: Sequence[Point]


class Collectable(Protocol):
    def collect(self) -> Iterable[Metric]: ...


class MetricHistory:
    """Samples ``registry`` for ``panels``; ``start()`` runs it in a daemon thread until ``stop()``."""

    def __init__(
        self,
        registry: Collectable,
        panels: Sequence[Panel],
        interval_s: float = 5.0,
        maxlen: int = 720,
    ) -> None:
        self.registry = registry
        self.panels = tuple(panels)
        self.interval_s = interval_s
        self._points = {panel: deque[Point](maxlen=maxlen) for panel in self.panels}
        self._previous: dict[Panel, Point] = {}  # a rate panel's last (time, counter total)
        self._lock = threading.Lock()  # the sampler appends while a page request reads
        self._stopped = threading.Event()
        self._thread: threading.Thread | None = None

    def sample(self, now: float | None = None) -> None:
        """Read the registry once and record one point per panel (a rate's first sample records none)."""
        now = time.time() if now is None else now
        totals = self._totals()
        with self._lock:
            for panel in self.panels:
                value = self._value(panel, totals[panel], now)
                if value is not None:
                    self._points[panel].append((now, value * panel.scale))

    def series(self) -> list[Series]:
        with self._lock:
            return [Series(panel, list(self._points[panel])) for panel in self.panels]

    def start(self) -> MetricHistory:
        self._thread = threading.Thread(target=self._run, name="metric-history", daemon=True)
        self._thread.start()
        return self

    def stop(self) -> None:
        self._stopped.set()
        if self._thread is not None:
            self._thread.join(timeout=self.interval_s + 1)

    def is_running(self) -> bool:
        return self._thread is not None and self._thread.is_alive()

    def _run(self) -> None:
        while True:
            try:
                self.sample()
            except Exception:  # a dashboard must never take the service down: log, try again next tick
                log.exception("metric history: sampling failed; trying again in %.0f s", self.interval_s)
            if self._stopped.wait(self.interval_s):
                return

    def _totals(self) -> dict[Panel, float]:
        totals = dict.fromkeys(self.panels, 0.0)
        for family in self.registry.collect():
            for sample in family.samples:
                for panel in self.panels:
                    if panel.matches(sample.name, sample.labels):
                        totals[panel] += sample.value
        return totals

    def _value(self, panel: Panel, total: float, now: float) -> float | None:
        if panel.kind is Kind.SUM:
            return total
        if panel.kind is Kind.SINCE:
            return max(0.0, now - total) if total > 0 else 0.0
        return self._rate(panel, total, now)

    def _rate(self, panel: Panel, total: float, now: float) -> float | None:
        previous = self._previous.get(panel)
        self._previous[panel] = (now, total)
        if previous is None or now <= previous[0]:
            return None  # nothing to compare with yet, or the clock stepped back
        then, before = previous
        # A counter only falls when its process restarted: then all of it is new (as Prometheus rate()).
        increase = total - before if total >= before else total
        return increase / (now - then)
