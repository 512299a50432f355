"""The batch at the cursor drawn in the browser (app/web/batch.js) against app/batch_view.py, its oracle."""

from __future__ import annotations

import param
import pytest

from app.simulator.batch_data import batch_config
from app.simulator.state import SimState
from app.simulator.widget import RENDERER_JS
from app.simulator.widget_data import ViewKey, view_json
from core.chapter import worked_example as worked
from core.chapter.chapter_traffic import chapter_traffic
from tests.oracles.batch_view import BatchView

EXPOSE = "\nwindow.__B = { batchHtml };"
GENERATED = [(f"seed{seed}-{slots}", {"seed": seed, "slots": slots}) for seed in (0, 4, 37) for slots in (1, 4, 16)]
CASES = [  # (name, SimState settings)
    ("chapter", {"slots": 4, "window": 64, "trace": chapter_traffic(), "trace_name": "the chapter's traffic"}),
    ("worked", {"slots": 4, "batch_timeout": worked.BATCH_TIMEOUT, "window": worked.WINDOW,
                "trace": worked.worked_example(), "trace_name": "the chapter's worked example"}),
    *GENERATED,
    # More rows than the view draws, a pool past what it draws, and arrays cut short: every truncation path.
    ("many", {"seed": 4, "requests": 300, "slots": 32, "window": 200}),
    # A limited KV pool: the engine's pool at the cursor instead (paged, contiguous's runs, one too big to draw).
    ("pool-paged", {"seed": 4, "kv_blocks": 10, "window": 96}),
    ("pool-contiguous", {"seed": 4, "kv_blocks": 14, "allocation": "contiguous"}),
    ("pool-too-big", {"seed": 4, "requests": 300, "slots": 32, "window": 40, "kv_blocks": 1000}),
]  # fmt: skip


@pytest.fixture(scope="module")
def batch_page(browser):
    """A blank page holding renderer.js and batch.js as one module (as the widget concatenates them)."""
    page = browser.new_page()
    errors: list[str] = []
    page.on("pageerror", lambda exc: errors.append(str(exc)))
    page.set_content("<!doctype html><html><body></body></html>")
    page.add_script_tag(content=RENDERER_JS + EXPOSE, type="module")  # the widget's module already holds batch.js
    page.wait_for_function("window.__B !== undefined")
    yield page, errors
    page.close()


def _view(s: SimState) -> str:
    key = ViewKey(
        s.traffic_key(), s.slots, s.batch_timeout, s.window, s.clock, s.accelerator, s.model_shape, s.both,
        s.generator_applies, 16, s.kv_blocks, s.allocation,
    )  # fmt: skip
    return view_json(key)


def _first_difference(got: list[str], want: list[str], order) -> str:
    for k, (a, b) in enumerate(zip(got, want)):
        if a != b:
            at = next(j for j in range(min(len(a), len(b)) + 1) if a[j : j + 1] != b[j : j + 1])
            lo = max(0, at - 80)
            return f"{order[k]}: at char {at}\n js: …{a[lo : at + 120]}\n py: …{b[lo : at + 120]}"
    return f"lengths {len(got)} != {len(want)}"


@pytest.mark.parametrize("name, settings", CASES, ids=[c[0] for c in CASES])
def test_every_steps_batch_equals_pythons(batch_page, name, settings):
    """Both modes at every step of the window: batchHtml equals BatchView.html(), walking forward then backward."""
    page, errors = batch_page
    state = SimState(**settings)
    window = state.window
    # Continuous mode walks forward (one step's work per step); static mode walks back, so every step replays.
    order = [("continuous", t) for t in range(window)] + [("static", t) for t in reversed(range(window))]
    got = page.evaluate(
        """([view, config, order]) => {
          const v = JSON.parse(view);
          return order.map(([mode, t]) => window.__B.batchHtml(v, config, mode, t));
        }""",
        [_view(state), {"batch": batch_config()}, order],
    )
    view = BatchView(state=state)
    want = []
    for mode, t in order:
        with param.parameterized.discard_events(state):  # the view's own refresh would build each one twice
            state.param.update(mode=mode, step=t)
        want.append(view.html())
    assert got == want, _first_difference(got, want, order)
    assert errors == []


def test_on_a_clock_it_says_the_cursor_is_a_time(batch_page):
    """On a clock there is no batch per step: batchHtml says so in BatchView's words."""
    page, errors = batch_page
    state = SimState(seed=4, clock="ms")
    got = page.evaluate(
        "([view, config]) => window.__B.batchHtml({ ...JSON.parse(view), clock: 'ms' }, config, 'continuous', 3)",
        [_view(SimState(seed=4)), {"batch": batch_config()}],
    )
    assert got == BatchView(state=state).html()
    assert errors == []
