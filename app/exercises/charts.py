"""The exercises' figures as chart specs (data only), drawn in the browser by app/web/charts/chart.js on both pages.

A spec names its axes, ranges, series (lines, dots, bars), reference lines and marks; app/web/charts/chart.js documents
the fields. The served page sends specs to `Charts`; the exported page embeds the same specs and draws them with the
same module.
"""

from __future__ import annotations

import json

import param
from panel.custom import JSComponent

from app.web.bundle import bundle
from app.web.style import CSS

BAR_COLOR = "#0072B2"
REFERENCE_COLOR = "#767676"  # 4.5:1 on white, readable on the dark theme too


class Charts(JSComponent):
    """A row of figures drawn in the browser from `payload`: {"specs": [...]} (see charts_payload)."""

    payload = param.String(default="{}", doc='JSON: {"specs": [chart spec, ...]}')

    _esm = bundle("words.js", "charts/chart.js", "charts/charts_host.js")
    _stylesheets = [CSS]


def charts_payload(specs: list[dict]) -> str:
    """Return the JSON a Charts component draws: the specs, in order."""
    return json.dumps({"specs": specs}, separators=(",", ":"))


def bars_series(series_id: str, lefts, rights, heights, **style) -> dict:
    """Return a bar series: bar i spans [lefts[i], rights[i]] from the axis up to heights[i]."""
    return {"id": series_id, "kind": "bars", "x": list(lefts), "x2": list(rights), "y": list(heights), **style}
