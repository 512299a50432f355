"""The three exercises in the page: every number and plotted point read back from Chromium equals the core's."""

import re

import numpy as np
from playwright.sync_api import expect

from app.exercises.knee_words import PAGE_RATE_PER_S, guess_html
from app.exercises.spread import GUESSES, best_guess, guess_ratios
from app.exercises.temperature import ASSERTIONS, catches_bug, run_assertion
from core.chapter.spread import spread_study
from core.chapter.temperature_bug import ROWS
from core.clock.hardware import cost_model
from core.measure.sweep import DEFAULT_BATCHES, CostModel, decode_knee, knee, sweep

from .helpers import CHART_JS, open_app


def _chart(page, chart: str) -> dict:
    """Return what the knee's `chart` drew, read back from its SVG (None before it is drawn)."""
    return page.evaluate(CHART_JS, chart)


def _drawn(page, chart: str):
    """Return (the series drawn, the vertical marks and the batch each stands at, rounded) on `chart`."""
    got = _chart(page, chart)
    return None if got is None else (sorted(got["series"]), {k: round(v) for k, v in got["vlines"].items()})


# The hand-built model: 1 GB of weights at 1,000 GB/s is 1 ms, 5 ms of compute per token: a full decode pass of b
# rows takes 5b ms (and a pass that prefills a 1,000-token prompt 5 s).
HAND = {
    "Weights, billions of parameters": "1",
    "Bytes per parameter": "1",
    "KV-cache bytes per token": "0",
    "Memory bandwidth, GB/s": "1000",
    "Peak dense compute, TFLOP/s": "0.4",
    "Per-step overhead, ms": "0",
}
HAND_MODEL = CostModel(params_b=1, bytes_per_param=1, kv_bytes_per_token=0, mem_bw_gbs=1000, tflops=0.4, overhead_ms=0)


def _eventually(page, chart: str, want, seconds: float = 15) -> None:
    """Assert what `chart` drew comes to equal `want`: the figures' payload arrives after the HTML panes."""
    got = None
    for _ in range(int(seconds * 10)):
        got = _drawn(page, chart)
        if got == want:
            return
        page.wait_for_timeout(100)
    assert got == want


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
            "decode_itl_p99_ms": f"{p.decode_itl_p99_ms:.1f}",
            "itl_p99_ms": f"{p.itl_p99_ms:.1f}",
            "tokens_per_s": f"{p.tokens_per_s:.0f}",
            "p99_latency_s": f"{p.p99_latency_ms / 1e3:.2f}",
            "p99_admitted_s": f"{p.p99_admitted_ms / 1e3:.2f}",
        }
        for p in points
    }


def _guess(page, batch: int) -> None:
    page.locator(".bv-knee-guess button", has_text=re.compile(rf"^{batch}$")).first.click()


def test_the_knee_view_asks_for_a_guess_before_it_shows_the_knee(page, page_errors, app_url):
    """Before a guess: the question, the decode-alone line and the target, but no clock line, knee or table."""
    open_app(page, app_url, "?tab=knee")
    expect(page.locator("[data-guess=ask]").first).to_be_visible(timeout=15_000)
    assert page.locator("[data-knee]").count() == 0 and page.locator(".bv-knee-table").count() == 0
    _eventually(page, "knee-itl", (["decode"], {}))  # no clock line and no knee before the guess
    _eventually(page, "knee-throughput", (["throughput"], {}))
    points = sweep(PAGE_RATE_PER_S)  # the page opens below capacity (the sentences-true issue, item 6)
    best, decode = knee(points), decode_knee(points)
    expect(page.locator("[data-load]").first).to_have_attribute("data-load", "under")
    expect(page.locator("[data-motivation]").first).to_contain_text("a pass of 32 rows takes")
    _guess(page, 128)
    expect(page.locator("[data-knee]").first).to_have_attribute("data-knee", str(best.batch), timeout=15_000)
    expect(page.locator("[data-decode-knee]").first).to_have_attribute("data-decode-knee", str(decode.batch))
    expect(page.locator("[data-guess=above]").first).to_have_text("2 sizes above")  # 128 against 32
    assert "You guessed batch 128: " in guess_html(128, best)
    _eventually(page, "knee-itl", (["clock", "decode"], {"knee": best.batch, "decode-knee": decode.batch}))
    _eventually(page, "knee-throughput", (["throughput"], {"knee": best.batch}))
    expect(page.locator("[data-knee-here]").first).to_have_attribute("data-knee-here", str(best.batch))
    _guess(page, best.batch)
    expect(page.locator("[data-guess=right]").first).to_be_visible()


def test_the_knee_view_equals_the_cores_sweep(page, page_errors, app_url):
    """?tab=knee&rate=120&itl=30, after a guess: the table, the plotted ITL points and both knees are the core's."""
    open_app(page, app_url, "?tab=knee&rate=120&itl=30")
    points = sweep(120, DEFAULT_BATCHES, cost_model(), itl_target_ms=30)
    best, decode = knee(points), decode_knee(points)
    _guess(page, 64)
    expect(page.locator("[data-knee]").first).to_have_attribute("data-knee", str(best.batch), timeout=15_000)
    expect(page.locator("[data-decode-knee]").first).to_have_attribute("data-decode-knee", str(decode.batch))
    assert _table(page) == _expected(points)
    _eventually(page, "knee-itl", (["clock", "decode"], {"knee": best.batch, "decode-knee": decode.batch}))
    _eventually(page, "knee-latency", (["admitted", "e2e"], {"knee": best.batch}))
    drawn = _chart(page, "knee-itl")["series"]  # every point read back from the SVG through the axes' own ticks
    top = max(p.itl_p99_ms for p in points) * 1.3
    for name, column in (("clock", "itl_p99_ms"), ("decode", "decode_itl_p99_ms")):
        batches, values = zip(*drawn[name])
        assert np.allclose(batches, DEFAULT_BATCHES, rtol=0.01)
        assert np.allclose(values, [getattr(p, column) for p in points], atol=top / 500)
    latency = _chart(page, "knee-latency")["series"]["e2e"]  # a log axis read back through its ticks too
    assert np.allclose([v for _, v in latency], [p.p99_latency_ms / 1e3 for p in points], rtol=0.02)


def test_the_knee_on_a_hand_built_cost_model(page, page_errors, app_url):
    """Typed into the inputs, the hand-built model gives full decode passes of 5b ms and the core's two knees."""
    open_app(page, app_url, "?tab=knee&guess=8")
    for label, value in HAND.items():
        box = page.get_by_label(label, exact=True)
        box.fill(value)
        box.press("Enter")
    # Each input recomputes; wait for the last one (no overhead: batch 1 steps in exactly 5 ms).
    expect(page.locator(".bv-knee-table tr[data-batch='1'] td[data-col=step_ms]")).to_have_text("5.0", timeout=30_000)
    points = sweep(PAGE_RATE_PER_S, model=HAND_MODEL)  # the page's rate
    best, decode = knee(points), decode_knee(points)
    expect(page.locator("[data-knee]").first).to_have_attribute("data-knee", str(best.batch) if best else "none")
    expect(page.locator("[data-decode-knee]").first).to_have_attribute(
        "data-decode-knee", str(decode.batch) if decode else "none"
    )
    table = _table(page)
    assert [table[b]["step_ms"] for b in (1, 2, 4, 8, 16)] == ["5.0", "10.0", "20.0", "40.0", "80.0"]
    assert table == _expected(points)
    expect(page).to_have_url(re.compile(r"tab=knee"))


def test_the_spread_view_asks_then_equals_compare(page, page_errors, app_url):
    """?tab=spread&sigma=0.5: the ratios wait for a guess; revealed, they are compare's; the keyboard moves sigma."""
    open_app(page, app_url, "?tab=spread&sigma=0.5")
    cell = page.locator("[data-spread=heavy-drain_ratio]").first
    expect(cell).to_be_hidden()
    expect(page.get_by_role("button", name="Reveal the ratios")).to_be_disabled()
    page.get_by_label(GUESSES["uniform"][0], exact=True).check()
    page.get_by_role("button", name="Reveal the ratios").click()
    verdict = page.locator(".bv-verdict").first
    expect(verdict).to_have_attribute("data-verdict", "right" if best_guess() == "uniform" else "wrong", timeout=15_000)
    for key, ratio in guess_ratios().items():
        expect(page.locator(f"[data-guess={key}]").first).to_have_attribute("data-guess-ratio", f"{ratio:.2f}")
    expect(verdict).to_contain_text(f"{GUESSES[best_guess()][0]} keeps the most")

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


def test_the_temperature_test_is_run_on_both_samplers(page, page_errors, app_url):
    """Pick an assertion, run it: pass/fail on the fixed and buggy samplers as run_assertion gives; then the bug."""
    greedy = [label for label, _ in ROWS].index("greedy")
    open_app(page, app_url, "?tab=temperature", canvas=False)
    run = page.get_by_role("button", name="Run it on both samplers")
    expect(run).to_be_disabled(timeout=15_000)
    expect(page.locator("[data-changed]").first).to_be_hidden()  # the question comes first
    for code in (ASSERTIONS[2], next(c for c in ASSERTIONS if catches_bug(c))):
        page.get_by_label(code, exact=True).check()
        run.click()
        verdict = page.locator("[data-catches]").first
        expect(verdict).to_have_attribute("data-catches", str(int(catches_bug(code))), timeout=15_000)
        expect(verdict.locator("caption")).to_have_text(code)
        for sampler, bug in (("fixed", False), ("buggy", True)):
            cell = verdict.locator(f"[data-sampler={sampler}]")
            expect(cell).to_have_attribute("data-pass", str(int(run_assertion(code, bug))))
            expect(cell).to_have_text("passes" if run_assertion(code, bug) else "fails")
    expect(page.locator("[data-sampler=buggy]").first).to_have_text("fails")
    row = page.locator(f"tr[data-row='{greedy}'] .bv-draws").first
    expect(page.locator("[data-changed]").first).to_have_attribute("data-changed", "0", timeout=15_000)
    assert len(set(row.get_attribute("data-draws").split(","))) == 1
    page.locator("input[type=checkbox]").last.check()  # the sidebar's "Show both modes" comes first
    expect(page.locator("[data-changed]").first).to_have_attribute("data-changed", "2", timeout=15_000)
    assert len(set(row.get_attribute("data-draws").split(","))) > 1
    expect(page).to_have_url(re.compile(r"bug=1"), timeout=15_000)
