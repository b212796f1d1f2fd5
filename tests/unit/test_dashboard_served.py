"""The dashboard as the services serve it: their panels, over HTTP and in headless Chromium.

Chromium is required, not optional: when it is missing the browser test fails and says so
(.ci/run installs it).
"""

from __future__ import annotations

import urllib.error
import urllib.request
from collections.abc import Iterator
from pathlib import Path

import pytest
from gamelake_dev.screenshot import rendered_dom, screenshot
from prometheus_client import CollectorRegistry, Counter, Gauge

from ingest.core.errors import IngestError
from ingest.core.metrics import prometheus as metrics
from ingest.core.metrics.dashboard_page import render_page
from ingest.core.metrics.history import Kind, MetricHistory, Panel
from ingest.landing.service import run_command
from ingest.ops import refresh_command as refresh

PANELS = [
    Panel("Consumer lag (records)", "lag", note="all partitions added up"),
    Panel("Rows landed per second", "rows_total", Kind.RATE),
    Panel("Seconds since the last bronze commit", "last_commit", Kind.SINCE),
    Panel("Dead letters per second", "dead_letters_total", Kind.RATE),
]


def _history() -> tuple[CollectorRegistry, MetricHistory]:
    """A registry and 10 minutes of synthetic samples: a backlog that builds up and drains."""
    registry = CollectorRegistry()
    lag = Gauge("lag", "records to go", ["partition"], registry=registry)
    rows = Counter("rows", "rows landed", registry=registry)
    last_commit = Gauge("last_commit", "when", registry=registry)
    Counter("dead_letters", "dead letters", registry=registry)
    history = MetricHistory(registry, PANELS)
    start = 1_700_000_000.0
    for step in range(120):
        now = start + 5 * step
        backlog = max(0, 60 - abs(step - 60)) * 500
        lag.labels("0").set(backlog)
        lag.labels("1").set(backlog // 2)
        rows.inc(4000 + 40 * step)
        if step % 3 == 0:
            last_commit.set(now)
        history.sample(now=now)
    return registry, history


def test_every_dashboard_panel_reads_a_metric_its_registry_exposes():
    ingest = (metrics.REGISTRY, run_command.DASHBOARD_PANELS)
    for registry, panels in (ingest, (refresh.REGISTRY, refresh.DASHBOARD_PANELS)):
        families = {family.name: family.type for family in registry.collect()}
        for panel in panels:
            # a counter family is named without _total; its samples carry it
            family = panel.metric.removesuffix("_total")
            assert family in families, f"{panel.title}: no metric {panel.metric}"
            assert (families[family] == "counter") == (panel.kind is Kind.RATE), panel.title


@pytest.fixture
def dashboard_url() -> Iterator[str]:
    registry, history = _history()
    server = metrics.serve(
        "127.0.0.1",
        0,
        lambda: {"ok": True, "commits": 40},
        registry,
        dashboard=lambda: render_page("gamelake ingest", history.series()),
    )
    yield f"http://127.0.0.1:{server.server_address[1]}"
    server.shutdown()
    server.server_close()


def _get(url: str) -> tuple[int, str, str]:
    try:
        with urllib.request.urlopen(url, timeout=10) as response:
            return response.status, response.headers["Content-Type"], response.read().decode()
    except urllib.error.HTTPError as err:
        return err.code, err.headers["Content-Type"], err.read().decode()


def test_the_dashboard_is_served_at_root_and_dashboard_beside_metrics_and_healthz(dashboard_url: str):
    for path in ("/dashboard", "/", "/dashboard?panel=1"):
        status, kind, page = _get(dashboard_url + path)
        assert (status, kind) == (200, "text/html; charset=utf-8"), path
        assert page.count("<svg") == len(PANELS)
        assert all(panel.title in page for panel in PANELS)
    status, kind, exposition = _get(dashboard_url + "/metrics")
    assert status == 200 and kind.startswith("text/plain")
    assert 'lag{partition="0"}' in exposition
    assert _get(dashboard_url + "/healthz")[:2] == (200, "application/json")
    assert _get(dashboard_url + "/elsewhere")[0] == 404


def test_without_a_dashboard_only_metrics_and_healthz_are_served():
    server = metrics.serve("127.0.0.1", 0, lambda: {"ok": True}, CollectorRegistry())
    try:
        base = f"http://127.0.0.1:{server.server_address[1]}"
        assert _get(base + "/dashboard")[0] == 404
        assert _get(base + "/")[0] == 404
        assert _get(base + "/metrics")[0] == 200
    finally:
        server.shutdown()
        server.server_close()


def test_chromium_renders_one_plot_per_panel_and_a_screenshot(dashboard_url: str, tmp_path: Path):
    dom = rendered_dom(dashboard_url + "/dashboard")
    assert dom.count("<svg") == len(PANELS)
    assert dom.count("<polyline") >= 2 * len(PANELS)  # each plot: its axes and its line
    assert all(panel.title in dom for panel in PANELS)
    png = screenshot(dashboard_url + "/dashboard", tmp_path / "dashboard.png", (1200, 900))
    assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert png.stat().st_size > 20_000, "the screenshot is too small to hold the plots"


def test_a_missing_chromium_fails_and_says_how_to_install_it(monkeypatch: pytest.MonkeyPatch):
    monkeypatch.setenv("PATH", "")
    with pytest.raises(IngestError, match="apt-get install chromium"):
        rendered_dom("http://127.0.0.1:1/")
