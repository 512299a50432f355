"""The exported page, opened from file:// with every network request blocked, draws what the core computes."""

import re
import subprocess
import sys

import pytest
from playwright.sync_api import expect

from app.exercises.knee import verdict_html
from core import compute_metrics, simulate
from core.hardware import cost_model
from core.spread import spread_study
from core.sweep import DEFAULT_BATCHES, decode_knee, knee, sweep
from core.worked_example import BATCH_TIMEOUT, SLOTS, worked_example

from .helpers import READY_JS, assert_numbers_match_core, core_run, text_of
from .pixels import read_timeline


@pytest.fixture(scope="module")
def exported(tmp_path_factory):
    """Write the page with the real CLI, in its own process (as a course author would)."""
    path = tmp_path_factory.mktemp("export") / "page.html"
    subprocess.run([sys.executable, "-m", "batchviz", "export", str(path)], check=True, capture_output=True)
    return path.as_uri()


@pytest.fixture
def offline(page):
    """Abort every request that is not the page file itself; return the list of what was attempted."""
    attempted: list[str] = []

    def handle(route):
        if route.request.url.startswith("file:"):
            route.continue_()
        else:
            attempted.append(route.request.url)
            route.abort()

    page.route("**/*", handle)
    failed: list[str] = []
    page.on("requestfailed", lambda request: failed.append(request.url))
    yield attempted + failed
    assert attempted == [] and failed == [], f"the page tried to load {attempted + failed}"


def _open(page, url: str) -> None:
    page.goto(url)
    page.wait_for_function(READY_JS, polling=100, timeout=30_000)
    page.locator(".bk-Canvas >> visible=true").first.wait_for(timeout=30_000)  # ?tab= may hide the first


def _set(page, **values) -> None:
    """Set controls as the widgets do (slots, seed, step sliders; mode index), then let Bokeh repaint."""
    page.evaluate(
        """(values) => { const doc = Bokeh.documents[0];
             for (const [name, value] of Object.entries(values))
               doc.get_model_by_name(name)[name === 'mode' ? 'active' : 'value'] = value; }""",
        values,
    )
    page.wait_for_timeout(150)


def test_export_renders_offline_and_matches_the_core(page, page_errors, offline, exported, artifacts):
    """Default view and three other settings: the pixels equal the core's timeline cell for cell."""
    _open(page, exported)
    assert read_timeline(page, 4, 64) == core_run("continuous", 4, 4).timeline_strings(64)
    for mode, slots, seed in [("static", 9, 5), ("continuous", 16, 3), ("static", 1, 0)]:
        _set(page, mode=["continuous", "static"].index(mode), slots=slots, seed=seed)
        assert read_timeline(page, slots, 64) == core_run(mode, slots, seed).timeline_strings(64), (mode, slots, seed)
    page.screenshot(path=artifacts / "export-static-1-0.png", full_page=True)


def test_export_keyboard_moves_slots(page, page_errors, offline, exported):
    """The slots slider answers the keyboard, as in the served app."""
    _open(page, exported)
    handle = page.locator(".noUi-handle").first
    handle.focus()
    handle.press("ArrowRight")
    handle.press("ArrowRight")
    page.wait_for_timeout(150)
    assert read_timeline(page, 6, 64) == core_run("continuous", 6, 4).timeline_strings(64)


# (static, 8, 7) has utilisation exactly 12.5% and (static, 5, 1) an average latency of exactly 6.25: Python
# rounds such ties to even ("12%", "6.2"), JavaScript's toFixed rounds them up, and the page must say what the app says.
@pytest.mark.parametrize(
    "mode,slots,seed", [("static", 4, 4), ("continuous", 9, 5), ("static", 7, 12), ("static", 8, 7), ("static", 5, 1)]
)
def test_export_numbers_equal_the_core_metrics(page, page_errors, offline, exported, mode, slots, seed):
    """Live stats and the head-to-head table are the core's numbers, formatted as the served app formats them."""
    _open(page, exported)
    _set(page, mode=["continuous", "static"].index(mode), slots=slots, seed=seed)
    assert_numbers_match_core(page, mode, slots, seed)


def test_export_playback_reveals_cells_and_logs_decisions(page, page_errors, offline, exported):
    """Reset, step, play: the readout, the revealed cells, stats and the decision log follow the core."""
    _open(page, exported)
    run = core_run("static", 4, 4)
    full = run.timeline_strings(64)
    _set(page, mode=1)
    page.get_by_role("button", name="Reset").click()
    expect(page.locator(".bv-step").first).to_have_text("step 0")
    for _ in range(5):
        page.get_by_role("button", name="Step ▸").click()
    expect(page.locator(".bv-step").first).to_have_text("step 5")
    assert read_timeline(page, 4, 64) == [row[:6] + "-" * 58 for row in full]  # step 5 is the pass at the cursor
    assert text_of(page, "[data-stat=useful_tokens]") == str(compute_metrics(run, 6).useful_tokens)
    assert text_of(page, ".bk-Div >> text=/^step 5:/") == run.describe_step(5)
    page.get_by_role("button", name="▶ Play").click()
    expect(page.locator(".bv-step").first).not_to_have_text("step 5", timeout=5000)
    page.get_by_role("button", name="❚❚ Pause").click()
    page.wait_for_timeout(300)
    step = int(page.locator(".bv-step").first.get_attribute("data-step"))
    assert 5 < step <= 63
    assert read_timeline(page, 4, 64) == [row[: step + 1] + "-" * (63 - step) for row in full]
    assert text_of(page, ".bk-Div >> text=/^step \\d+:/") == run.describe_step(step)


def test_export_has_the_worked_example(page, page_errors, offline, exported):
    """?preset=worked opens the worked example (static timeout 1) from file://; a button goes back to generated."""
    worked_static = simulate(worked_example(), SLOTS, "static", BATCH_TIMEOUT)
    _open(page, exported + "?preset=worked")
    _set(page, mode=1)
    assert read_timeline(page, SLOTS, 64) == worked_static.timeline_strings(64)
    assert text_of(page, "[data-stat=completed]") == "6/6"
    assert text_of(page, "[data-h2h=static-avg_latency]") == f"{compute_metrics(worked_static, 64).avg_latency:.1f}"
    _set(page, slots=6)
    expected = simulate(worked_example(), 6, "static", BATCH_TIMEOUT).timeline_strings(64)
    assert read_timeline(page, 6, 64) == expected
    page.get_by_role("button", name="Generated traffic").click()
    page.wait_for_timeout(150)
    assert read_timeline(page, 6, 64) == core_run("static", 6, 4).timeline_strings(64)


def _knee_table(page) -> dict[int, dict[str, str]]:
    rows = page.locator(".bv-knee-table tr[data-batch]")
    out = {}
    for k in range(rows.count()):
        cells = rows.nth(k).locator("td[data-col]")
        out[int(rows.nth(k).get_attribute("data-batch"))] = {
            cells.nth(j).get_attribute("data-col"): cells.nth(j).inner_text() for j in range(cells.count())
        }
    return out


def test_export_exercises_equal_the_core(page, page_errors, offline, exported):
    """From file://: the knee at a preset, rate and target, the spread at a sigma, the bug's counter: the core's."""
    _open(page, exported + "?tab=knee")
    expect(page.locator("[data-guess=ask]").first).to_be_visible()  # the guess comes first
    assert page.locator("[data-knee]").count() == 0 and page.locator(".bv-knee-table").count() == 0
    _set_models(page, {"knee-accelerator": "a100-80gb", "knee-model": "llama3-8b", "knee-rate": "20"})
    _set_models(page, {"knee-target": 30})
    _set_models(page, {"knee-guess": DEFAULT_BATCHES.index(64)}, prop="active")
    points = sweep(20.0, DEFAULT_BATCHES, cost_model("a100-80gb", "llama3-8b"), itl_target_ms=30)
    best, decode = knee(points), decode_knee(points)
    expect(page.locator("[data-knee]").first).to_have_attribute("data-knee", str(best.batch) if best else "none")
    served = re.sub(r"<[^>]+>", "", verdict_html(best, decode, 30, 64))  # the served view's sentence, as text
    expect(page.locator(".bv-knee").first).to_have_text(served)
    table = _knee_table(page)
    for p in points:
        assert table[p.batch] == {
            "step_ms": f"{p.step_ms:.1f}",
            "decode_itl_p99_ms": f"{p.decode_itl_p99_ms:.1f}",
            "itl_p99_ms": f"{p.itl_p99_ms:.1f}",
            "tokens_per_s": f"{p.tokens_per_s:.0f}",
            "p99_latency_s": f"{p.p99_latency_ms / 1e3:.2f}",
        }
    page.locator(".bk-tab", has_text="Exercise 2").first.click()
    _set_models(page, {"spread-sigma": 0.5})
    for c in spread_study(0.5):
        expect(page.locator(f"[data-spread={c.kind}-drain_ratio]").first).to_have_text(f"{c.drain_ratio:.2f}x")
    page.locator(".bk-tab", has_text="Exercise 3").first.click()
    expect(page.locator("[data-changed]").first).to_have_attribute("data-changed", "0")
    _set_models(page, {"temperature-bug": True}, prop="active")
    expect(page.locator("[data-changed]").first).to_have_attribute("data-changed", "2")


def _set_models(page, values: dict, prop: str = "value") -> None:
    """Set Bokeh models' values by name, as their widgets would, and let the page redraw."""
    page.evaluate(
        """([values, prop]) => { const doc = Bokeh.documents[0];
             for (const [name, value] of Object.entries(values)) doc.get_model_by_name(name)[prop] = value; }""",
        [values, prop],
    )
    page.wait_for_timeout(150)
