"""The dashboard page: one inline SVG per panel, every text escaped, nothing loaded from elsewhere."""

from __future__ import annotations

from ingest.core.metrics.dashboard_page import render_page
from ingest.core.metrics.history import Panel, Series

MINUTE = [(1000.0 + 5 * i, float(i % 4)) for i in range(13)]  # 60 s of a wobbling value


def test_one_svg_per_panel_with_its_title_current_value_range_and_span():
    page = render_page(
        "gamelake ingest",
        [Series(Panel("Lag", "lag"), MINUTE), Series(Panel("Rows", "rows"), [(1.0, 1234.5)])],
    )
    assert page.count("<svg") == 2
    assert '<h2>Lag<span class="now">0</span></h2>' in page
    assert ">3</text>" in page  # the maximum, top of the y axis
    assert "last 1 min 0 s · 13 samples" in page
    assert '<span class="now">1,234</span>' in page  # large values are rounded, with separators


def test_an_empty_panel_says_there_is_no_data_yet():
    page = render_page("t", [Series(Panel("Empty", "x"), []), Series(Panel("Full", "y"), MINUTE)])
    assert page.count("no data yet") == 1
    assert page.index("no data yet") < page.index("Full")


def test_every_text_is_escaped():
    hostile = '<script>alert("x")</script>'
    page = render_page(
        hostile,
        [Series(Panel(hostile, "x", note=hostile), [])],
        health={"ok": False, hostile: hostile},
    )
    assert "<script" not in page
    assert "&lt;script&gt;" in page


def test_the_page_reloads_itself_and_loads_nothing_from_elsewhere():
    page = render_page("t", [Series(Panel("Lag", "lag"), MINUTE)])
    assert '<meta http-equiv="refresh" content="5">' in page
    assert "http://" not in page and "https://" not in page and "src=" not in page
    assert "<script" not in page


def test_health_shows_as_a_verdict_and_its_details():
    assert "healthy" not in render_page("t", [])
    page = render_page("t", [], health={"ok": True, "commits": 3, "partitions": ["a[0]"]})
    assert '<b class="ok">healthy</b> · commits: 3 · partitions: [&quot;a[0]&quot;]' in page
    assert '<b class="bad">unhealthy</b>' in render_page("t", [], health={"ok": False})
