"""Read an SVG chart (app/web/charts/chart.js) back into data units, as a learner's eye would: through its axes' ticks.

The Python twin of tests/browser/helpers.py CHART_JS, for SVG drawn in node: each polyline's points, each dot's
centre, each bar's span and height, each vertical mark and the legend's words, inverted through the tick marks.
"""

from __future__ import annotations

import math
import xml.etree.ElementTree as ET

SVG = "{http://www.w3.org/2000/svg}"


def _invert(pairs: list[tuple[float, float]], log: bool):
    f = math.log10 if log else (lambda v: v)
    (v0, p0), (v1, p1) = pairs[0], pairs[-1]
    return lambda p: (
        (10 ** (f(v0) + (p - p0) * (f(v1) - f(v0)) / (p1 - p0))) if log else (v0 + (p - p0) * (v1 - v0) / (p1 - p0))
    )


def charts_in(html: str) -> dict[str, dict]:
    """Return every chart in `html` (SVG elements, possibly inside a wrapping div) by its data-chart id, read back."""
    root = ET.fromstring(f"<root>{html}</root>")
    return {svg.get("data-chart"): read_chart(svg) for svg in root.iter(f"{SVG}svg") if svg.get("data-chart")}


def read_chart(svg: ET.Element) -> dict:
    """Return {series, dots, bars, vlines, legend, title} of one chart, in data units."""
    lines = list(svg.iter(f"{SVG}line"))
    xt = [(float(e.get("data-tick-x")), float(e.get("x1"))) for e in lines if e.get("data-tick-x") is not None]
    yt = [(float(e.get("data-tick-y")), float(e.get("y1"))) for e in lines if e.get("data-tick-y") is not None]
    x, y = _invert(xt, svg.get("data-log-x") == "1"), _invert(yt, svg.get("data-log-y") == "1")
    out: dict = {"series": {}, "dots": {}, "bars": {}, "vlines": {}}
    for e in svg.iter(f"{SVG}polyline"):
        points = [tuple(map(float, xy.split(","))) for xy in e.get("points").split()]
        out["series"][e.get("data-series")] = [(x(a), y(b)) for a, b in points]
    for g in svg.iter(f"{SVG}g"):
        if g.get("data-dots") is not None:
            out["dots"][g.get("data-dots")] = [(x(float(m.get("data-cx"))), y(float(m.get("data-cy")))) for m in g]
        if g.get("data-bars") is not None:
            base = y(max(float(r.get("y")) + float(r.get("height")) for r in g)) if len(g) else 0.0
            out["bars"][g.get("data-bars")] = [
                (x(float(r.get("x"))), x(float(r.get("x")) + float(r.get("width"))), y(float(r.get("y"))) - base)
                for r in g
            ]
    for e in lines:
        if e.get("data-vline") is not None:
            out["vlines"][e.get("data-vline")] = x(float(e.get("x1")))
    texts = [t.text or "" for t in svg.iter(f"{SVG}text")]
    out["title"] = texts[0] if texts else ""
    out["texts"] = texts
    return out
