"""Exercise 1's figures: the sweep's columns, drawn in the browser (app/web/charts/: knee_charts.js, chart.js).

The server sends the sweep's columns, the target, whether the learner has guessed and the replay's step times; the
browser finds both knees for the target and draws inter-token latency against it, throughput and p99 latency. The
exported page draws the same columns with the same modules.
"""

from __future__ import annotations

import json

import param
from panel.custom import JSComponent

from app.web.bundle import bundle
from app.web.style import CSS
from core.measure.sweep import SweepPoint

# The modules that draw the figures, in the order a bundle needs them.
CHART_MODULES = ("words.js", "charts/chart.js", "charts/knee_charts.js")


def points_data(points: tuple[SweepPoint, ...]) -> dict[str, list]:
    """Return the plotted columns: batch, full decode step, ITL p99 (decode alone and on the clock), tokens/s, p99 s."""
    return {
        "batch": [p.batch for p in points],
        "step_ms": [p.step_ms for p in points],
        "decode_itl_p99_ms": [p.decode_itl_p99_ms for p in points],
        "itl_p99_ms": [p.itl_p99_ms for p in points],
        "tokens_per_s": [p.tokens_per_s for p in points],
        "p99_latency_s": [p.p99_latency_ms / 1e3 for p in points],
        "p99_admitted_s": [p.p99_admitted_ms / 1e3 for p in points],
        "peak_rows": [p.peak_rows for p in points],
        "one_run": [p.one_run for p in points],  # every larger size runs this run: the knee is named by the first
    }


def knee_payload(points: tuple[SweepPoint, ...], target_ms: float, revealed: bool, measured: dict) -> str:
    """Return what the figures draw from: the sweep's columns, the target, the guess made, the replay's step ms."""
    pairs = sorted(measured.items())
    return json.dumps(
        {
            "points": points_data(points),
            "target": target_ms,
            "revealed": revealed,
            "measured": {"batch": [b for b, _ in pairs], "step_ms": [ms for _, ms in pairs]},
        },
        separators=(",", ":"),
    )


class KneeCharts(JSComponent):
    """The knee's three figures, drawn in the browser from `payload` (see knee_payload)."""

    payload = param.String(default="{}", doc="JSON: the sweep's columns, target, guess made, replay's step ms")

    _esm = bundle(*CHART_MODULES, "charts/knee_host.js")
    _stylesheets = [CSS]
