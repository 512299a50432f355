"""The exercises' figures drawn by app/web/charts/chart.js in node, read back through their axes: the core's numbers.

No browser: node imports the modules the pages run (the knee's knee_host.js, the rows' charts_host.js) and draws each
figure to SVG; tests/chart_reader.py inverts every point, bar and mark through the tick marks the chart drew.
"""

from __future__ import annotations

import json
import re
import shutil
import subprocess
from pathlib import Path

import numpy as np
import pytest

from app.exercises.knee import cached_sweep
from app.exercises.knee_plots import knee_payload
from app.exercises.knee_words import PAGE_RATE_PER_S
from app.exercises.spread import advantage_curve, case, curve_spec, histogram, histogram_specs, histogram_top
from app.exercises.temperature import BUGGY, CORRECT, ROWS, row_specs
from core.clock.hardware import cost_model
from core.measure.sweep import DEFAULT_BATCHES, decode_knee, knee, retarget

from .chart_reader import charts_in

HARNESS = Path(__file__).resolve().parent / "node" / "charts.mjs"


@pytest.fixture(scope="module")
def draw():
    """Draw [{kind, payload, width}] in node; return each one's SVG."""
    node = shutil.which("node")
    assert node, "node is needed for the chart tests: ./dev test installs it (apt-get install nodejs)"

    def run(items: list[dict]) -> list[str]:
        proc = subprocess.run([node, str(HARNESS)], input=json.dumps(items), capture_output=True, text=True)
        assert proc.returncode == 0, proc.stderr[-2000:]
        return json.loads(proc.stdout)

    return run


def test_the_knee_figures_mark_the_cores_knees_and_plot_its_sweep(draw):
    """Two rates x four targets, before and after the guess: marks at the sweep's knees, every point the sweep's."""
    cases = [(rate, target, revealed) for rate in (PAGE_RATE_PER_S, 80.0) for target in (8, 30, 50, 120)
             for revealed in (False, True)]  # fmt: skip
    payloads = [json.loads(knee_payload(cached_sweep(r, cost_model()), t, v, {})) for r, t, v in cases]
    drawn = draw([{"kind": "knee", "payload": p, "width": 900} for p in payloads])
    for (rate, target, revealed), svg in zip(cases, drawn):
        points = retarget(list(cached_sweep(rate, cost_model())), target)
        best, decode = knee(points), decode_knee(points)
        charts = charts_in(svg)
        itl, throughput, latency = charts["knee-itl"], charts["knee-throughput"], charts["knee-latency"]
        marks = {k: round(v) for k, v in itl["vlines"].items()}
        if not revealed:  # the question first: no clock line, no knee
            assert set(itl["series"]) == {"decode"} and marks == {} and throughput["vlines"] == {}
            continue
        want = {"knee": best.batch} if best else {"no-knee": DEFAULT_BATCHES[0]}
        assert marks == {**want, **({"decode-knee": decode.batch} if decode else {})}, (rate, target)
        assert ("no batch meets the target" in itl["texts"]) == (best is None)
        top = max(max(p.itl_p99_ms for p in points) * 1.3, target * 1.4)
        batches, clock = zip(*itl["series"]["clock"])
        assert np.allclose(batches, DEFAULT_BATCHES, rtol=0.01)
        assert np.allclose(clock, [p.itl_p99_ms for p in points], atol=top / 400)
        tokens = [v for _, v in throughput["series"]["throughput"]]
        assert np.allclose(tokens, [p.tokens_per_s for p in points], atol=max(tokens) * 1.1 / 400)
        e2e = [v for _, v in latency["series"]["e2e"]]  # a log axis, inverted through its own ticks
        assert np.allclose(e2e, [p.p99_latency_ms / 1e3 for p in points], rtol=0.03)
        assert {k: round(v) for k, v in throughput["vlines"].items()} == ({"knee": best.batch} if best else {})


def test_the_knee_figures_draw_the_replays_step_times_as_diamonds(draw):
    """Measured step times, where a replay ran, are dots at their batch sizes and values, named in the legend."""
    payload = json.loads(knee_payload(cached_sweep(PAGE_RATE_PER_S, cost_model()), 50, True, {1: 6.0, 4: 9.5}))
    itl = charts_in(draw([{"kind": "knee", "payload": payload, "width": 700}])[0])["knee-itl"]
    got = [(round(b), round(v, 1)) for b, v in itl["dots"]["measured"]]
    assert got == [(1, 6.0), (4, 9.5)] and "measured by the replay" in itl["texts"]


@pytest.mark.parametrize("sigma", [0.5, 1.2, 2.0])
def test_the_spread_figures_are_the_cores_histograms_and_curve(draw, sigma):
    """Every bar is a histogram bin's count over its own edges; the curve is the advantage; every line is named."""
    cases = [case(kind, sigma) for kind in ("heavy", "uniform", "fixed")]
    row, curve = draw([{"kind": "row", "payload": {"specs": histogram_specs(cases)}, "width": 900},
                       {"kind": "row", "payload": {"specs": [curve_spec(sigma)]}, "width": 900}])  # fmt: skip
    charts, top = charts_in(row), histogram_top(cases)
    for c in cases:
        want = histogram(c.lengths, top)
        bars = charts_in(row)[f"spread-{c.kind}"]["bars"]["count"]
        assert np.allclose([b[0] for b in bars], want["left"], atol=top / 200)
        tallest = max(max(want["count"]), 1) * 1.1
        assert np.allclose([b[2] for b in bars], want["count"], atol=tallest / 150), c.kind
    assert len(charts) == 3
    drawn = charts_in(curve)["spread-curve"]
    assert np.allclose([v for _, v in drawn["series"]["heavy"]], advantage_curve()["ratio"], rtol=0.02)
    assert round(drawn["vlines"]["sigma"], 2) == sigma
    names = [t for t in drawn["texts"] if "lengths (" in t or "by sigma" in t]
    assert names == ["heavy-tailed, by sigma", f"uniform lengths ({case('uniform', 0).drain_ratio:.2f}x)",
                     f"fixed lengths ({case('fixed', 0).drain_ratio:.2f}x)"]  # fmt: skip


def test_the_temperature_figures_are_the_samplers_distributions(draw):
    """Each row's bars are what it samples from (the bug on), outlined by its own; both named in each legend."""
    html = draw([{"kind": "row", "payload": {"specs": row_specs(BUGGY)}, "width": 900}])[0]
    charts = charts_in(html)
    for i in range(len(ROWS)):
        chart = charts[f"temperature-row{i}"]
        assert np.allclose([b[2] for b in chart["bars"]["p"]], BUGGY.probs[i], atol=0.01)
        assert np.allclose([b[2] for b in chart["bars"]["correct"]], CORRECT.probs[i], atol=0.01)
        assert "what the row samples from" in chart["texts"] and "its own temperature's (outlined)" in chart["texts"]
    assert not np.allclose(BUGGY.probs[0], CORRECT.probs[0]) or not np.allclose(BUGGY.probs[1], CORRECT.probs[1])


def test_a_row_of_charts_wraps_on_a_phone_and_sits_side_by_side_on_a_laptop(draw):
    """Three histograms: one per line at 390 px (each the column's width), three across at 900 px."""
    specs = histogram_specs([case(kind, 1.2) for kind in ("heavy", "uniform", "fixed")])
    phone, laptop = draw([{"kind": "row", "payload": {"specs": specs}, "width": w} for w in (390, 900)])

    def widths(html: str) -> list[int]:
        return [int(w) for w in re.findall(r'class="bv-chart"[^>]*? width="(\d+)"', html)]

    assert widths(phone) == [390, 390, 390]
    assert widths(laptop) == [292, 292, 292]
