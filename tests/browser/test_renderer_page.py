"""The served page's renderer: drawn ahead equals what the server confirms, no stale frame wins, playback in order."""

from __future__ import annotations

from .helpers import assert_numbers_match_core, core_run, open_app, wait_for_timeline
from .pixels import read_timeline

SETTLED_JS = """(seed) => {
  const w = window.__bvWidget;
  return w && w.settings.seed === seed && w.view && window.__bvConfirmedSeed === seed;
}"""
# Record the seed of every payload the page accepts, and every step it paints.
HOOKS_JS = """() => {
  window.__steps = [];
  window.__bvOnPaint = (t) => window.__steps.push(t);
  window.__bvOnConfirm = () => { window.__bvConfirmedSeed = window.__bvWidget.settings.seed; };
  // The paints each server answer causes (a resize of the page meanwhile may paint too: not the answer's doing).
  const w = window.__bvWidget, confirm = w.confirm;
  window.__confirmPaints = 0;
  w.confirm = (...args) => {
    const before = window.__bvPaints;
    confirm(...args);
    window.__confirmPaints += window.__bvPaints - before;
  };
}"""


def test_a_seed_move_draws_ahead_and_the_server_confirms_the_same_view(page, page_errors, app_url):
    """One seed step is drawn from the neighbour the server sent ahead; the confirmation repaints nothing."""
    open_app(page, app_url, "?slots=4&seed=4")
    page.evaluate(HOOKS_JS)
    seed = page.locator("input[name=seed]")
    seed.focus()
    paints = page.evaluate("window.__bvPaints")
    seed.press("ArrowRight")
    page.wait_for_function(f"window.__bvPaints > {paints}", polling=5)
    drawn_key = page.evaluate("window.__bvWidget.view.key")
    drawn = read_timeline(page, 4, 64)
    page.wait_for_function(SETTLED_JS, arg=5, polling=20, timeout=10_000)
    assert page.evaluate("window.__bvWidget.view.key") == drawn_key  # the server's answer is the view drawn ahead
    assert page.evaluate("window.__confirmPaints") == 0  # and the answer needed no second paint
    assert drawn == core_run("continuous", 4, 5).timeline_strings(64)
    assert_numbers_match_core(page, "continuous", 4, 5)
    assert page_errors == []


def test_quick_seed_moves_end_on_the_final_seeds_picture_and_numbers(page, page_errors, app_url):
    """Six key presses at once: whatever the server answers meanwhile, the page ends on seed 10, the core's."""
    open_app(page, app_url, "?slots=4&seed=4")
    page.evaluate(HOOKS_JS)
    seed = page.locator("input[name=seed]")
    seed.focus()
    for _ in range(6):
        seed.press("ArrowRight")
    page.wait_for_function(SETTLED_JS, arg=10, polling=20, timeout=15_000)
    page.wait_for_timeout(500)  # a late answer for an earlier seed must not repaint over it
    expected = core_run("continuous", 4, 10).timeline_strings(64)
    wait_for_timeline(page, expected, 4)
    assert read_timeline(page, 4, 64, name="timeline-other") == core_run("static", 4, 10).timeline_strings(64)
    assert page.locator("output[data-value=seed]").inner_text() == "10"
    assert_numbers_match_core(page, "continuous", 4, 10)
    assert "seed=10" in page.url
    assert page_errors == []


def test_playback_at_16_ms_paints_every_step_in_order_and_ends_on_the_cores_timeline(page, page_errors, app_url):
    """Play at one frame per step: steps 0..63 each painted once, in order, ending on the core's whole timeline."""
    open_app(page, app_url, "?slots=4&seed=4")
    page.get_by_role("button", name="« Start").first.click()
    page.evaluate(HOOKS_JS)
    page.evaluate("window.__bvInterval = 16")
    page.get_by_role("button", name="▶ Play").first.click()
    page.wait_for_function("window.__steps.length >= 63 && window.__bvWidget.timer === null", timeout=20_000)
    assert page.evaluate("window.__steps") == list(range(1, 64))
    run = core_run("continuous", 4, 4)
    wait_for_timeline(page, run.timeline_strings(64), 4)
    assert page.get_by_role("button", name="▶ Play").first.is_visible()  # it stopped at the end by itself
    page.wait_for_function("document.location.search.includes('step=63') || !document.location.search.includes('step')")
    assert page_errors == []
