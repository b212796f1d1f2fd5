"""The dashboard's sampler: sums, rates and ages from a registry, a bounded history, a sturdy thread."""

from __future__ import annotations

import time

import pytest
from prometheus_client import CollectorRegistry, Counter, Gauge
from prometheus_client.core import CounterMetricFamily

from ingest.core.metrics.history import Kind, MetricHistory, Panel


def _points(history: MetricHistory, title: str) -> list[tuple[float, float]]:
    return next(list(one.points) for one in history.series() if one.panel.title == title)


def test_a_sum_panel_adds_up_the_gauges_samples_that_carry_its_labels():
    registry = CollectorRegistry()
    lag = Gauge("lag", "records to go", ["topic", "partition"], registry=registry)
    lag.labels("a", "0").set(3)
    lag.labels("a", "1").set(4)
    lag.labels("b", "0").set(100)
    history = MetricHistory(
        registry, [Panel("all", "lag"), Panel("topic a", "lag", labels={"topic": "a"}), Panel("none", "gone")]
    )
    history.sample(now=1000.0)
    assert _points(history, "all") == [(1000.0, 107.0)]
    assert _points(history, "topic a") == [(1000.0, 7.0)]
    assert _points(history, "none") == [(1000.0, 0.0)]


def test_a_rate_panel_records_the_increase_per_second_from_two_samples():
    registry = CollectorRegistry()
    rows = Counter("rows", "rows landed", registry=registry)
    per_second = Panel("per s", "rows_total", Kind.RATE)
    per_minute = Panel("per min", "rows_total", Kind.RATE, scale=60)
    history = MetricHistory(registry, [per_second, per_minute])
    history.sample(now=100.0)
    assert _points(history, "per s") == []  # nothing to compare the first sample with
    rows.inc(50)
    history.sample(now=105.0)
    rows.inc(10)
    history.sample(now=110.0)
    assert _points(history, "per s") == [(105.0, 10.0), (110.0, 2.0)]
    assert _points(history, "per min") == [(105.0, 600.0), (110.0, 120.0)]


class _RestartingCounter:
    """A collector whose counter goes 40, then 5 (its process restarted), then 5."""

    def __init__(self) -> None:
        self.values = [40.0, 5.0, 5.0]

    def collect(self):
        family = CounterMetricFamily("rows", "rows landed")
        family.add_metric([], self.values.pop(0))
        yield family


def test_a_counter_that_fell_counts_as_new_from_zero_and_a_clock_step_back_records_nothing():
    history = MetricHistory(_RestartingCounter(), [Panel("rate", "rows_total", Kind.RATE)])
    history.sample(now=10.0)
    history.sample(now=20.0)
    history.sample(now=15.0)
    assert _points(history, "rate") == [(20.0, 0.5)]


def test_a_since_panel_records_the_age_of_a_timestamp_and_0_before_it_was_set():
    registry = CollectorRegistry()
    last_commit = Gauge("last_commit", "when", registry=registry)
    history = MetricHistory(registry, [Panel("age", "last_commit", Kind.SINCE)])
    history.sample(now=1000.0)
    last_commit.set(990.0)
    history.sample(now=1012.5)
    assert _points(history, "age") == [(1000.0, 0.0), (1012.5, 22.5)]


def test_the_history_keeps_only_the_newest_maxlen_points():
    registry = CollectorRegistry()
    level = Gauge("level", "a level", registry=registry)
    history = MetricHistory(registry, [Panel("level", "level")], maxlen=3)
    for second in range(5):
        level.set(second)
        history.sample(now=float(second))
    assert _points(history, "level") == [(2.0, 2.0), (3.0, 3.0), (4.0, 4.0)]


class _FailingTwice:
    """A registry whose first two scrapes raise."""

    def __init__(self) -> None:
        self.registry = CollectorRegistry()
        Gauge("up", "up", registry=self.registry).set(1)
        self.calls = 0

    def collect(self):
        self.calls += 1
        if self.calls <= 2:
            raise RuntimeError("collector broke")
        return self.registry.collect()


def test_a_registry_that_raises_is_logged_and_the_sampler_keeps_going(caplog: pytest.LogCaptureFixture):
    history = MetricHistory(_FailingTwice(), [Panel("up", "up")], interval_s=0.01).start()
    try:
        deadline = time.monotonic() + 10
        while not _points(history, "up") and time.monotonic() < deadline:
            time.sleep(0.01)
        assert _points(history, "up"), "the sampler stopped after the registry raised"
        assert history.is_running()
    finally:
        history.stop()
    assert not history.is_running()
    assert "sampling failed" in caplog.text
    assert "collector broke" in caplog.text
