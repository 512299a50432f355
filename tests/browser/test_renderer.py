"""The browser's renderer against Python's builders, its oracles: every step's texts equal, and the drawn pixels."""

from __future__ import annotations

import json

import pytest

from app.simulator.state import MODES, shared_runs, shared_timed_runs
from app.simulator.widget import RENDERER_JS
from app.simulator.widget_data import ViewKey, compact_pair, h2h_compact, view_json
from core import TrafficConfig
from core.chapter import worked_example as worked
from core.chapter.chapter_traffic import chapter_traffic
from core.clock.hardware import DEFAULT_ACCELERATOR, DEFAULT_MODEL_SHAPE
from core.sched.policies import get_policy
from tests.oracles.loop_view import clock_loop_texts, loop_texts
from tests.oracles.progress import clock_playback_texts, clock_times, playback_texts

EXPOSE = (
    "\nwindow.__R = { playbackHtml, loopHtml, h2hCompactHtml, describeStep, niceTicks, clockPlaybackHtml,"
    " clockLoopHtml };"
)
CASES = [  # (name, traffic, slots, batch timeout, window, KV pool in blocks (0: unlimited), allocation)
    ("chapter", tuple(chapter_traffic()), 4, 0, 64, 0, "paged"),
    ("worked", tuple(worked.worked_example()), 4, worked.BATCH_TIMEOUT, worked.WINDOW, 0, "paged"),
    *(
        (f"seed{seed}-{slots}", TrafficConfig(seed=seed), slots, 0, 64, 0, "paged")
        for seed in (0, 4, 37)
        for slots in (1, 4, 16)
    ),
    ("lesson-fixed-queued", TrafficConfig(seed=4, lengths="fixed", arrival_window=1), 4, 0, 64, 0, "paged"),
    ("many", TrafficConfig(seed=4, requests=300), 32, 0, 200, 0, "paged"),
    # Memory decides: preemptions and recompute (paged), waits behind holes (contiguous), rectangles (static).
    ("paged-10", TrafficConfig(seed=4), 4, 0, 96, 10, "paged"),
    ("paged-raised", TrafficConfig(seed=4), 4, 0, 64, 3, "paged"),
    ("contiguous-12", TrafficConfig(seed=4), 4, 0, 128, 12, "contiguous"),
    ("paged-many", TrafficConfig(seed=4, requests=300), 32, 0, 200, 60, "paged"),
    # Two priority classes: priority's compact table adds each class's latency; a tight pool preempts by class.
    ("classes", TrafficConfig(seed=3, requests=24, high_priority_share=0.3), 2, 0, 64, 0, "paged"),
    ("classes-paged-14", TrafficConfig(seed=3, requests=24, high_priority_share=0.3), 3, 0, 96, 14, "paged"),
]


@pytest.fixture(scope="module")
def renderer(browser):
    """A blank page holding the renderer module, its functions on window.__R."""
    page = browser.new_page()
    page.set_content("<!doctype html><html><body></body></html>")
    page.add_script_tag(content=RENDERER_JS + EXPOSE, type="module")
    page.wait_for_function("window.__R !== undefined")
    yield page
    page.close()


def _key(traffic, slots, timeout, window, kv_blocks=0, allocation="paged") -> ViewKey:
    return ViewKey(
        traffic, slots, timeout, window, "steps", DEFAULT_ACCELERATOR, DEFAULT_MODEL_SHAPE, True, True, 16,
        kv_blocks, allocation,
    )  # fmt: skip


@pytest.mark.parametrize(
    "name, traffic, slots, timeout, window, kv_blocks, allocation", CASES, ids=[c[0] for c in CASES]
)
def test_every_steps_texts_equal_pythons(renderer, name, traffic, slots, timeout, window, kv_blocks, allocation):
    """Readout, stats, waste meter, KV line, decision log and lit loop: the JS strings equal Python's, every step."""
    view = view_json(_key(traffic, slots, timeout, window, kv_blocks, allocation))
    loops = None  # each run brings its own loop's lines
    got = renderer.evaluate(
        """([view, loops]) => {
          const v = JSON.parse(view), out = {};
          for (const mode of Object.keys(v.runs)) {
            out[mode] = { panel: [], loop: [] };
            for (let t = 0; t < v.window; t++) {
              out[mode].panel.push(window.__R.playbackHtml(v, mode, t));
              out[mode].loop.push(window.__R.loopHtml(v, mode, t));
            }
          }
          out.h2h = Object.fromEntries(Object.keys(v.runs).map((m) => [m, window.__R.h2hCompactHtml(v, m)]));
          return out;
        }""",
        [view, loops],
    )
    runs = shared_runs(traffic, slots, timeout, kv_blocks, allocation)
    pool = json.loads(view)["pool"]
    assert (pool is None) == (kv_blocks == 0)
    for run in runs.values():
        assert got[run.policy]["panel"] == list(playback_texts(run, window, pool)), run.policy
        assert got[run.policy]["loop"] == list(loop_texts(run, window, pool is not None)), run.policy
    assert set(got["h2h"]) == set(runs) == set(MODES)  # every mode the page offers, each with its compact table
    for mode in runs:
        first, second = compact_pair(runs, mode)
        assert got["h2h"][mode] == h2h_compact(runs[first], runs[second], window, None), mode
    classed = len({r.priority for r in runs["continuous"].requests}) > 1
    assert ("Avg latency, priority 0" in got["h2h"]["priority"]) == classed  # each class's latency, when classed
    assert "Avg latency, priority 0" not in got["h2h"]["sjf"]


def test_the_view_is_flat_arrays_the_size_of_the_traffic():
    """The server sends data, not per-step HTML: a view holds per-request arrays and no step's text."""
    view = json.loads(view_json(_key(TrafficConfig(seed=4), 4, 0, 64)))
    assert set(view["runs"]) == set(MODES)
    for run in view["runs"].values():
        assert all(len(run[k]) == 12 for k in ("start", "finish", "slot", "release"))
    assert "step 0" not in json.dumps(view)  # no readout or log text: the renderer writes those
    timed = view_json(ViewKey(TrafficConfig(seed=4), 4, 0, 64, "ms", DEFAULT_ACCELERATOR, DEFAULT_MODEL_SHAPE, True,
                              True, 16))  # fmt: skip
    # On a clock too, only arrays and the timed head-to-head table: no frame's readout, log or loop.
    assert "bv-step" not in timed and "bv-loop" not in timed and "pass_start_ms" in timed


def test_ticks_are_round_numbers(renderer):
    """The axis ticks are 1, 2 or 5 times a power of ten, spanning the window."""
    assert renderer.evaluate("window.__R.niceTicks(64)") == [0, 10, 20, 30, 40, 50, 60]
    assert renderer.evaluate("window.__R.niceTicks(24)") == [0, 5, 10, 15, 20]


CLOCK_CASES = [
    ("chapter", tuple(chapter_traffic()), 4, 0, DEFAULT_ACCELERATOR, DEFAULT_MODEL_SHAPE),
    ("seed4-a100", TrafficConfig(seed=4), 4, 0, "a100-80gb", "llama2-13b"),
    ("seed37-16", TrafficConfig(seed=37), 16, 0, DEFAULT_ACCELERATOR, DEFAULT_MODEL_SHAPE),
    ("worked", tuple(worked.worked_example()), 4, worked.BATCH_TIMEOUT, DEFAULT_ACCELERATOR, DEFAULT_MODEL_SHAPE),
]


@pytest.mark.parametrize(
    "name, traffic, slots, timeout, accelerator, model", CLOCK_CASES, ids=[c[0] for c in CLOCK_CASES]
)
def test_every_clock_frames_texts_equal_pythons(renderer, name, traffic, slots, timeout, accelerator, model):
    """On a clock: the time readout, stats in ms, pass meter, the pass under the cursor and the loop, every frame."""
    key = ViewKey(traffic, slots, timeout, 64, "ms", accelerator, model, True, True, 16)
    loops = None  # each run brings its own loop's lines
    got = renderer.evaluate(
        """([view, loops]) => {
          const v = JSON.parse(view), out = {};
          for (const mode of Object.keys(v.runs)) {
            out[mode] = { panel: [], loop: [] };
            for (let k = 0; k < v.window; k++) {
              out[mode].panel.push(window.__R.clockPlaybackHtml(v, mode, k));
              out[mode].loop.push(window.__R.clockLoopHtml(v, mode, k));
            }
          }
          return out;
        }""",
        [view_json(key), loops],
    )
    timed = shared_timed_runs(traffic, slots, timeout, accelerator, model)
    for run in timed.values():  # each mode's axis ends at the later drain of the pair it shows
        end = max(run.drain_ms, timed[get_policy(run.policy).versus].drain_ms)
        assert got[run.policy]["panel"] == list(clock_playback_texts(run, end, 64)), run.policy
        assert got[run.policy]["loop"] == list(clock_loop_texts(run, clock_times(end, 64))), run.policy
