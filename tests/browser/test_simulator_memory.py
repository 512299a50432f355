"""The simulator on a KV pool, read back from the browser: recompute cells, waits, the KV strip, memory's words."""

from __future__ import annotations

import io

import numpy as np
from PIL import Image
from playwright.sync_api import expect

from app.page import palette
from app.simulator import memory_lesson
from app.simulator.state import CHAPTER_NAME, SimState
from core.chapter.chapter_traffic import chapter_traffic
from core.sched.engine import memory_waits
from core.sched.run import STATE_CHARS
from tests.oracles.loop_view import loop_texts
from tests.oracles.progress import playback_texts

from .helpers import open_app
from .pixels import STATE_COLOURS, nearest_state

MEMORY_COLOURS = {**STATE_COLOURS, "R": palette.RECOMPUTE_COLOR}
KV_COLOURS = {"m": palette.MEMORY_COLOR, ".": palette.IDLE_COLOR}
KV_JS = """([name, steps]) => {
  const tl = window.__bvWidget.timelines[name === "timeline" ? 0 : 1], box = tl.canvas.getBoundingClientRect();
  const out = [];
  for (let t = 0; t < steps; t++) out.push(box.left + tl.x(t + 0.5));
  return { xs: out, top: box.top + tl.kvTop, scale: tl.kvScale, waits: tl.drawnWaits };
}"""
CENTRES_JS = """([name, slots, steps]) => {
  const tl = window.__bvWidget.timelines[name === "timeline" ? 0 : 1];
  return [...Array(slots).keys()].map((s) => [...Array(steps).keys()].map((t) => tl.cellCentre(s, t)));
}"""
BARS = 26  # app/web/renderer.js KV.bars


def _page_state(**settings) -> SimState:
    """Return the state a fresh page opens on (the chapter's traffic) with `settings`."""
    state = SimState(**settings)
    state.use_trace(chapter_traffic(), CHAPTER_NAME)
    return state


def _image(page) -> np.ndarray:
    page.evaluate("window.scrollTo(0, 0)")
    return np.asarray(Image.open(io.BytesIO(page.screenshot(full_page=True))).convert("RGB")).astype(float)


def _expected_grid(run, step: int, window: int = 64) -> list[str]:
    chars = np.frombuffer(STATE_CHARS.encode(), dtype=np.uint8)[run.grid(window)]
    return [row.tobytes().decode()[: step + 1] + "-" * (window - step - 1) for row in chars]


def test_a_tight_paged_pool_draws_the_engines_run(page, page_errors, app_url):
    """?kv_blocks=10 (raised to the least pool), step 63: both timelines, recompute included, and the KV bars."""
    open_app(page, app_url, "?kv_blocks=10&step=63")
    state = _page_state(kv_blocks=10)
    image = _image(page)
    for name, run in (("timeline", state.runs["continuous"]), ("timeline-other", state.runs["static"])):
        centres = page.evaluate(CENTRES_JS, [name, 4, 64])
        drawn = ["".join(nearest_state(image[round(y), round(x)], MEMORY_COLOURS) for x, y in row) for row in centres]
        assert drawn == _expected_grid(run, 63), name
        kv = page.evaluate(KV_JS, [name, 64])
        assert kv["scale"] == state.pool
        assert kv["waits"] == sum(1 for w in memory_waits(run.schedule) if w.step < 64) > 0  # each ⊘ drawn
        blocks = run.schedule.blocks_by_step()
        bottom = round(kv["top"]) + BARS - 1
        for t, x in enumerate(kv["xs"]):  # the dark bar's height at each step's column, from the strip's bottom
            column = image[round(kv["top"]) : bottom + 1, round(x)]
            dark = int(
                sum(nearest_state(p, {"m": palette.MEMORY_COLOR, ".": palette.IDLE_COLOR}) == "m" for p in column)
            )
            assert abs(dark - round(BARS * int(blocks[t]) / state.pool)) <= 1, (name, t)
    assert "R" in "".join(_expected_grid(state.runs["continuous"], 63))  # the view does show a recompute


def test_memorys_words_on_the_page_are_pythons(page, page_errors, app_url):
    """The panel (KV line, log), the lit loop, the memory legend and caption, and the pool at the cursor."""
    state = _page_state(kv_blocks=10)
    run = state.runs["continuous"]
    t = next(d.step for d in run.log if d.kind == "preempt")  # the first preemption
    open_app(page, app_url, f"?kv_blocks=10&step={t}")
    panel = page.locator(".bv-panel").first.inner_html()
    assert panel == playback_texts(run, 64, state.pool)[t]
    normalised = page.evaluate(  # the browser's serialisation of Python's string (' is not escaped back)
        "(h) => { const d = document.createElement('div'); d.innerHTML = h; return d.firstChild.innerHTML; }",
        loop_texts(run, 64, True)[t],
    )
    assert page.locator(".bv-loop").first.inner_html() == normalised
    assert "preempted" in page.locator('.bv-loop [data-line="preempt"].bv-lit').first.inner_text()
    assert page.locator(".bv-legend-memory").count() == 1
    assert "preempts the one admitted last" in page.locator(".bv-caption").first.inner_text()
    assert page.locator("[data-kvpool]").count() == 2  # the engine's pool at the cursor, both modes
    owners = run.schedule.pool_maps[list(run.schedule.pass_start).index(t)]
    held = sum(1 for o in owners if o >= 0)
    words = page.locator('[data-kvpool="paged"] .bv-muted').first.inner_text()
    assert words == f"{held} of {state.pool} blocks held, {state.pool - held} free"
    waits = page.evaluate(KV_JS, ["timeline", 1])["waits"]
    assert waits == sum(1 for w in memory_waits(run.schedule) if w.step <= t)


def test_the_default_page_shows_the_kv_held_without_memory_words(page, page_errors, app_url):
    """Unlimited (the default): a KV strip on the larger peak's scale, no memory legend, the plain caption."""
    open_app(page, app_url, "?step=63")
    state = _page_state()
    peak = max(int(run.schedule.blocks_by_step().max()) for run in state.runs.values())
    assert page.evaluate(KV_JS, ["timeline", 1])["scale"] == peak
    assert page.locator(".bv-legend-memory").count() == 0
    assert "(unlimited pool)" in page.locator(".bv-kv").first.inner_text()
    assert page.locator("[data-kvpool]").count() == 0


def test_the_memory_lessons_buttons_show_what_its_text_says(page, page_errors, app_url):
    """From other traffic, each button opens the chapter's traffic on its pool; the drains are the text's figures."""
    open_app(page, app_url, "?seed=9&slots=7")
    f = memory_lesson.lesson()
    text = page.locator('[data-claim="memory-same-pool"]').first
    text.scroll_into_view_if_needed()
    cases = [
        (f"A pool of {f.pool} blocks, paged", f.pool, f.paged_drain, f.static_drain),
        ("The same pool, contiguous", f.pool, f.contiguous_drain, f.static_drain),
        (f"{f.tight_pool} blocks: preemption", f.tight_pool, f.tight_drain, None),
    ]
    for label, pool, continuous_drain, static_drain in cases:
        page.get_by_role("button", name=label).click()
        expect(page.locator("[data-h2h=continuous-drain]").first).to_have_text(str(continuous_drain))
        if static_drain is not None:
            expect(page.locator("[data-h2h=static-drain]").first).to_have_text(str(static_drain))
        assert page.evaluate(KV_JS, ["timeline", 1])["scale"] == pool
        assert f"of {pool} blocks" in page.locator(".bv-kv").first.inner_text()
    page.get_by_role("button", name="Unlimited memory").click()
    expect(page.locator("[data-h2h=continuous-drain]").first).to_have_text(str(f.unlimited_drain["continuous"]))
    expect(page.locator(".bv-kv").first).to_contain_text("(unlimited pool)")
