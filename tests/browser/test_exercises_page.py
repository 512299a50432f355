"""The three exercises in the page: every number and plotted point read back from Chromium equals the core's."""

import re

import numpy as np
from playwright.sync_api import expect

from core.hardware import cost_model
from core.spread import spread_study
from core.sweep import DEFAULT_BATCHES, knee, sweep
from core.temperature_bug import ROWS

from .helpers import open_app

PLOTTED_JS = """([name, column]) => {
  const fig = Bokeh.documents[0].get_model_by_name(name);
  const r = fig.renderers.find((r) => r.data_source.data[column] !== undefined);
  return [Array.from(r.data_source.data.batch), Array.from(r.data_source.data[column])];
}"""
KNEE_JS = """(name) => {
  const fig = Bokeh.documents[0].get_model_by_name(name);
  return fig.center.filter((m) => m.type === "Span" && m.dimension === "height").map((m) => m.location);
}"""
# The hand-built model: 1 GB of weights at 1,000 GB/s is 1 ms, 5 ms of compute per row: a full batch of b takes 5b ms.
HAND = {
    "Weights, billions of parameters": "1",
    "Bytes per parameter": "1",
    "KV-cache bytes per token": "0",
    "Memory bandwidth, GB/s": "1000",
    "Peak dense compute, TFLOP/s": "0.4",
    "Per-step overhead, ms": "0",
}


def _table(page) -> dict[int, dict[str, str]]:
    rows = page.locator(".bv-knee-table tr[data-batch]")
    out = {}
    for k in range(rows.count()):
        row = rows.nth(k)
        cells = row.locator("td[data-col]")
        out[int(row.get_attribute("data-batch"))] = {
            cells.nth(j).get_attribute("data-col"): cells.nth(j).inner_text() for j in range(cells.count())
        }
    return out


def _expected(points) -> dict[int, dict[str, str]]:
    return {
        p.batch: {
            "step_ms": f"{p.step_ms:.1f}",
            "itl_p99_ms": f"{p.itl_p99_ms:.1f}",
            "tokens_per_s": f"{p.tokens_per_s:.0f}",
            "p99_latency_s": f"{p.p99_latency_ms / 1e3:.2f}",
        }
        for p in points
    }


def test_the_knee_view_equals_the_cores_sweep(page, page_errors, app_url):
    """?tab=knee&rate=120&itl=30: the table, the plotted ITL points and the knee marker are the core's sweep."""
    open_app(page, app_url, "?tab=knee&rate=120&itl=30")
    points = sweep(120, DEFAULT_BATCHES, cost_model(), itl_target_ms=30)
    best = knee(points)
    expect(page.locator("[data-knee]").first).to_have_attribute("data-knee", str(best.batch), timeout=15_000)
    assert _table(page) == _expected(points)
    batches, itl = page.evaluate(PLOTTED_JS, ["knee-itl", "itl_p99_ms"])
    assert batches == list(DEFAULT_BATCHES)
    assert np.allclose(itl, [p.itl_p99_ms for p in points])
    assert page.evaluate(KNEE_JS, "knee-itl") == [best.batch]


def test_the_knee_on_a_hand_built_cost_model(page, page_errors, app_url):
    """Typing the hand-built model into the inputs gives full steps of 5b ms and the knee at batch 8 (40 ms)."""
    open_app(page, app_url, "?tab=knee")
    for label, value in HAND.items():
        box = page.get_by_label(label, exact=True)
        box.fill(value)
        box.press("Enter")
    # Each input recomputes; wait for the last one (no overhead: batch 1 steps in exactly 5 ms).
    expect(page.locator(".bv-knee-table tr[data-batch='1'] td[data-col=step_ms]")).to_have_text("5.0", timeout=15_000)
    expect(page.locator("[data-knee]").first).to_have_attribute("data-knee", "8")
    table = _table(page)
    assert [table[b]["step_ms"] for b in (1, 2, 4, 8, 16)] == ["5.0", "10.0", "20.0", "40.0", "80.0"]
    assert [table[b]["itl_p99_ms"] for b in (8, 16)] == ["40.0", "80.0"]  # saturated: every batch fills
    assert page.evaluate(KNEE_JS, "knee-itl") == [8]
    expect(page).to_have_url(re.compile(r"tab=knee"))


def test_the_spread_view_equals_compare(page, page_errors, app_url):
    """?tab=spread&sigma=0.5: the three kinds' ratios and padding shares are compare's; the keyboard moves sigma."""
    open_app(page, app_url, "?tab=spread&sigma=0.5")

    def check(sigma: float) -> None:
        for case in spread_study(sigma):
            cell = page.locator(f"[data-spread={case.kind}-drain_ratio]").first
            expect(cell).to_have_text(f"{case.drain_ratio:.2f}x", timeout=15_000)
            padding = page.locator(f"[data-spread={case.kind}-padding]").first
            expect(padding).to_have_text(f"{case.padding_share:.0%}")

    check(0.5)
    handle = page.locator(".noUi-handle").last  # the sidebar's sliders come first
    handle.focus()
    for _ in range(3):
        handle.press("ArrowLeft")
    check(0.2)
    expect(page).to_have_url(re.compile(r"sigma=0\.2"), timeout=15_000)


def test_the_temperature_bug_makes_the_greedy_row_sample(page, page_errors, app_url):
    """Without the bug the greedy row draws one token 20 times and nothing changed; with it, it samples: 2 rows of 3."""
    greedy = [label for label, _ in ROWS].index("greedy")
    open_app(page, app_url, "?tab=temperature")
    row = page.locator(f"tr[data-row='{greedy}'] .bv-draws").first
    expect(page.locator("[data-changed]").first).to_have_attribute("data-changed", "0", timeout=15_000)
    assert len(set(row.get_attribute("data-draws").split(","))) == 1
    page.locator("input[type=checkbox]").last.check()  # the sidebar's "Show both modes" comes first
    expect(page.locator("[data-changed]").first).to_have_attribute("data-changed", "2", timeout=15_000)
    assert len(set(row.get_attribute("data-draws").split(","))) > 1
    expect(page).to_have_url(re.compile(r"bug=1"), timeout=15_000)
