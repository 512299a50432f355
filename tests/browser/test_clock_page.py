"""The timeline on a clock: every request's rectangle starts and ends, to a pixel, where the core's timed run says."""

import io
from dataclasses import replace

import numpy as np
from PIL import Image
from playwright.sync_api import expect

from app.page import palette
from core import TrafficConfig, generate
from core.clock.hardware import cost_model
from core.sched.timed import simulate_timed, timed_metrics

from .helpers import open_app
from .pixels import nearest_state

X_PIXEL_JS = """([name, xs, slot]) => {
  const tl = window.__bvWidget.timelines[name === "timeline" ? 0 : 1];
  return [xs.map(x => tl.pagePoint(x, slot + 0.5)[0]), tl.pagePoint(0, slot + 0.5)[1]];
}"""
COLOURS = {"G": palette.GENERATING_COLOR, ".": palette.IDLE_COLOR, "P": palette.PADDING_COLOR, "W": "#FFFFFF"}


def _core_runs(accelerator: str, model: str):
    cost = cost_model(accelerator, model)
    step = float(cost.pass_ms(1, 0, 0))  # the app's arrival step on a clock
    requests = [replace(r, arrival=round(r.arrival * step)) for r in generate(TrafficConfig(seed=4))]
    return {p: simulate_timed(requests, 4, p, cost) for p in ("static", "continuous")}


def _edges_match(page, name: str, run, slot: int) -> int:
    """Check each rectangle edge in `slot`: the state changes within a pixel of where the run's times map."""
    mine = np.flatnonzero(run.slot == slot)
    times = sorted({float(t) for i in mine for t in (run.start_ms[i], run.finish_ms[i], run.release_ms[i])})
    xs, y = page.evaluate(X_PIXEL_JS, [name, times, slot])
    image = np.asarray(Image.open(io.BytesIO(page.screenshot(full_page=True))).convert("RGB")).astype(float)
    row = image[int(round(y))]
    checked = 0
    for x in xs:
        x = int(round(x))
        left = nearest_state(row[x - 3], COLOURS)
        right = nearest_state(row[x + 3], COLOURS)
        if left == right:
            continue  # two rectangles of one state meet here: only a 1 px white seam marks it
        # The state flips within a pixel of the mapped time: 2 px either side already show the two states.
        assert nearest_state(row[x - 2], COLOURS) in (left, "W") and nearest_state(row[x + 2], COLOURS) in (right, "W")
        checked += 1
    return checked


def test_on_a_clock_the_columns_are_the_passes_times(page, page_errors, app_url):
    """?clock=ms: edges within 2 px of the core's timed times; head-to-head's ms figures are the core's."""
    runs = _core_runs("h100-sxm", "llama2-7b")
    open_app(page, app_url, "?clock=ms&mode=continuous&slots=4&seed=4")
    expect(page.locator("[data-h2h=continuous-tokens_per_s]").first).to_be_visible(timeout=15_000)
    page.wait_for_function("Bokeh.documents[0].is_idle", polling=100)
    page.wait_for_timeout(300)
    checked = sum(_edges_match(page, "timeline", runs["continuous"], s) for s in range(4))
    checked += sum(_edges_match(page, "timeline-other", runs["static"], s) for s in range(4))
    assert checked >= 12
    for policy, run in runs.items():
        m = timed_metrics(run)
        expect(page.locator(f"[data-h2h={policy}-tokens_per_s]").first).to_have_text(f"{m.tokens_per_s:,.0f}")
        expect(page.locator(f"[data-h2h={policy}-ttft_p50]").first).to_have_text(f"{m.ttft_ms['p50']:,.1f}")
        expect(page.locator(f"[data-h2h={policy}-e2e_p99]").first).to_have_text(f"{m.e2e_ms['p99']:,.1f}")


def test_another_preset_redraws_on_its_clock(page, page_errors, app_url):
    """Choosing the A100 slows every pass: the continuous drain on the page's axis grows to the core's."""
    open_app(page, app_url, "?clock=ms&accelerator=a100-80gb&model=llama2-13b&slots=4&seed=4")
    runs = _core_runs("a100-80gb", "llama2-13b")
    end = max(r.drain_ms for r in runs.values())
    page.wait_for_function(f"Math.abs(window.__bvWidget.timelines[0].end - {end}) < 1e-6", timeout=15_000)
    assert _edges_match(page, "timeline", runs["continuous"], 0) >= 1


def _white_right_of(page, name: str, t: float, slots: int) -> list[bool]:
    """Return, per slot, whether the pixel just right of time t is the curtain's white."""
    image = np.asarray(Image.open(io.BytesIO(page.screenshot(full_page=True))).convert("RGB")).astype(float)
    out = []
    for slot in range(slots):
        xs, y = page.evaluate(X_PIXEL_JS, [name, [t], slot])
        out.append(nearest_state(image[int(round(y)), int(round(xs[0])) + 3], COLOURS) == "W")
    return out


def test_on_a_clock_playback_moves_a_time_cursor_and_every_figure_is_in_ms(page, page_errors, app_url):
    """?clock=ms&step=10: the readout is a time, the stats are the core's by then, the curtain stands there."""
    runs = _core_runs("h100-sxm", "llama2-7b")
    end = max(r.drain_ms for r in runs.values())
    times = [end * (k + 1) / 64 for k in range(64)]
    open_app(page, app_url, "?clock=ms&mode=continuous&slots=4&seed=4&step=10")
    run = runs["continuous"]
    readout = page.locator(".bv-step").first
    expect(readout).to_have_attribute("data-ms", f"{times[10]:.3f}", timeout=15_000)
    expect(readout).to_have_text(f"t = {times[10]:,.1f} ms")
    done = int((run.finish_ms <= times[10]).sum())
    expect(page.locator("[data-stat=completed]").first).to_have_text(f"{done}/12")
    expect(page.locator("[data-stat=avg_latency_ms]").first).to_be_visible()
    assert "steps" not in page.locator(".bv-stats").first.inner_text()
    page.wait_for_function("Bokeh.documents[0].is_idle", polling=100)
    assert all(_white_right_of(page, "timeline", times[10], 4))  # nothing drawn past the cursor
    page.get_by_role("button", name="Step ▸").first.click()
    expect(readout).to_have_attribute("data-ms", f"{times[11]:.3f}")
    page.wait_for_timeout(300)
    assert all(_white_right_of(page, "timeline", times[11], 4))
    assert not all(_white_right_of(page, "timeline", times[11] - (times[11] - times[10]) * 0.5, 4))
    for policy, timed in runs.items():
        m = timed_metrics(timed)
        expect(page.locator(f"[data-h2h={policy}-drain_ms]").first).to_have_text(f"{m.drain_ms:,.1f}")
    expect(page.locator("[data-h2h=static-utilisation]")).to_have_count(0)  # no step figure on a clock
