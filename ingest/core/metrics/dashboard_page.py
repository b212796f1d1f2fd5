"""The dashboard page: one line plot per panel, drawn as inline SVG in a self-contained HTML page.

Why a page the services serve rather than a Grafana dashboard: Grafana cannot be installed on
this project's machines, so a Grafana JSON could be neither tested nor screenshotted here. This
page needs nothing but the service's own port and a browser; it is tested like any other code,
headless Chromium included. It loads no script, stylesheet or font from anywhere, and reloads
itself every 5 s. A Prometheus + Grafana setup can still scrape ``/metrics`` as before.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from html import escape

from ingest.core.metrics.history import Point, Series

WIDTH, HEIGHT = 520, 150
LEFT, RIGHT, TOP, BOTTOM = 64, 12, 10, 24  # room for the y labels left and the span label below
PLOT_W, PLOT_H = WIDTH - LEFT - RIGHT, HEIGHT - TOP - BOTTOM
RELOAD_S = 5

STYLE = """
body { font: 14px/1.4 system-ui, sans-serif; margin: 24px; color: #1f2937; background: #f9fafb; }
h1 { font-size: 20px; margin: 0 0 4px; }
.health { margin: 0 0 16px; color: #4b5563; }
.health b.ok { color: #15803d; } .health b.bad { color: #b91c1c; }
.grid { display: grid; grid-template-columns: repeat(auto-fill, minmax(540px, 1fr)); gap: 16px; }
.panel { background: #fff; border: 1px solid #e5e7eb; border-radius: 6px; padding: 10px 12px; }
h2 { font-size: 15px; margin: 0; display: flex; justify-content: space-between; }
.now { font-variant-numeric: tabular-nums; color: #1d4ed8; }
.note { margin: 2px 0 6px; min-height: 1.4em; font-size: 12px; color: #6b7280; }
svg text { font: 11px system-ui, sans-serif; fill: #6b7280; }
footer { margin-top: 16px; font-size: 12px; color: #6b7280; }
"""


def render_page(title: str, series: Sequence[Series], health: Mapping[str, object] | None = None) -> str:
    """The whole page for ``series``; ``health`` (a /healthz dict) shows as a line under the title."""
    panels = "\n".join(_panel(one) for one in series)
    return f"""<!doctype html>
<html lang="en"><head><meta charset="utf-8">
<meta http-equiv="refresh" content="{RELOAD_S}">
<title>{escape(title)}</title>
<style>{STYLE}</style></head>
<body><h1>{escape(title)}</h1>
{_health_line(health)}
<div class="grid">
{panels}
</div>
<footer>Reloads every {RELOAD_S} s. Raw: <a href="/metrics">/metrics</a> ·
<a href="/healthz">/healthz</a></footer>
</body></html>
"""


def _panel(series: Series) -> str:
    panel, points = series.panel, series.points
    current = _number(points[-1][1]) if points else "&ndash;"
    return (
        f'<section class="panel"><h2>{escape(panel.title)}<span class="now">{current}</span></h2>'
        # the note's line is kept when empty, so the plots of a row line up
        f'<p class="note">{escape(panel.note)}</p>{_plot(panel.title, points)}</section>'
    )


def _plot(label: str, points: Sequence[Point]) -> str:
    axes = (
        f'<polyline points="{LEFT},{TOP} {LEFT},{TOP + PLOT_H} {LEFT + PLOT_W},{TOP + PLOT_H}" '
        'fill="none" stroke="#d1d5db"/>'
    )
    head = f'<svg width="{WIDTH}" height="{HEIGHT}" viewBox="0 0 {WIDTH} {HEIGHT}" role="img" '
    head += f'aria-label="{escape(label)}"><title>{escape(label)}</title>{axes}'
    return head + (_line(points) if points else _no_data()) + "</svg>"


def _no_data() -> str:
    middle = TOP + PLOT_H / 2
    return (
        f'<line x1="{LEFT}" y1="{TOP + PLOT_H}" x2="{LEFT + PLOT_W}" y2="{TOP + PLOT_H}" stroke="#93c5fd"/>'
        f'<text x="{LEFT + PLOT_W / 2}" y="{middle}" text-anchor="middle">no data yet</text>'
    )


def _line(points: Sequence[Point]) -> str:
    start, end = points[0][0], points[-1][0]
    values = [value for _, value in points]
    # Anchored at 0 so a small wobble does not look like a cliff; a flat series still gets a range.
    low = min(0.0, *values)
    high = max(values) if max(values) > low else low + 1

    def xy(at: float, value: float) -> str:
        x = LEFT + (PLOT_W * (at - start) / (end - start) if end > start else PLOT_W)
        y = TOP + PLOT_H * (high - value) / (high - low)
        return f"{x:.1f},{y:.1f}"

    path = " ".join(xy(at, value) for at, value in points)
    last = xy(*points[-1]).split(",")
    return (
        f'<polyline points="{path}" fill="none" stroke="#2563eb" stroke-width="1.5"/>'
        f'<circle cx="{last[0]}" cy="{last[1]}" r="2.5" fill="#2563eb"/>'
        f'<text x="{LEFT - 6}" y="{TOP + 9}" text-anchor="end">{_number(high)}</text>'
        f'<text x="{LEFT - 6}" y="{TOP + PLOT_H}" text-anchor="end">{_number(low)}</text>'
        f'<text x="{LEFT}" y="{HEIGHT - 6}">{_span_label(end - start, len(points))}</text>'
        f'<text x="{LEFT + PLOT_W}" y="{HEIGHT - 6}" text-anchor="end">latest</text>'
    )


def _health_line(health: Mapping[str, object] | None) -> str:
    if health is None:
        return ""
    verdict = '<b class="ok">healthy</b>' if health.get("ok") else '<b class="bad">unhealthy</b>'
    details = [f"{escape(key)}: {escape(_text(value))}" for key, value in health.items() if key != "ok"]
    return f'<p class="health">{" · ".join([verdict, *details])}</p>'


def _text(value: object) -> str:
    return value if isinstance(value, str) else json.dumps(value)


def _number(value: float) -> str:
    if float(value).is_integer():
        return f"{int(value):,}"
    return f"{value:,.0f}" if abs(value) >= 100 else f"{value:.3g}"


def _span_label(seconds: float, count: int) -> str:
    minutes, secs = divmod(round(seconds), 60)
    span = f"{minutes} min {secs} s" if minutes else f"{secs} s"
    return f"last {span} · {count} samples"
