"""The page's modules in node against their Python oracles, over a grid of settings a learner can reach.

Every step's readout, stats and log (playbackHtml), lit loop (loopHtml), compact head-to-head (h2hCompactHtml) and
batch at the cursor (batchHtml), for every mode, on seeds 0-30, slots 1, 2, 3, 4, 5 and 8, the chapter's traffic,
the worked example, each lesson, limited pools (paged and contiguous) and the clock: what app/web/renderer.js and
app/web/batch.js compute in node equals tests/oracles/'s Python. No browser: node imports the modules as they are.
"""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path

import param
import pytest

from app.simulator import story
from app.simulator.batch_data import batch_config
from app.simulator.state import SimState
from app.simulator.widget import view_key
from app.simulator.widget_data import compact_pair, h2h_compact, view_json
from core.chapter import worked_example as worked
from core.chapter.chapter_traffic import chapter_traffic
from core.sched.policies import get_policy
from tests.oracles.batch_view import BatchView
from tests.oracles.loop_view import clock_loop_texts, loop_texts
from tests.oracles.progress import clock_playback_texts, clock_times, playback_texts

HARNESS = Path(__file__).resolve().parent / "node" / "parity.mjs"
SLOTS = (1, 2, 3, 4, 5, 8)
SEEDS = range(0, 31, 5)
CHAPTER = {"trace": chapter_traffic(), "trace_name": "the chapter's traffic"}
WORKED = {"trace": worked.worked_example(), "trace_name": "the chapter's worked example",
          "batch_timeout": worked.BATCH_TIMEOUT, "window": worked.WINDOW}  # fmt: skip


def _grid() -> list[tuple[str, dict]]:
    """Return (name, SimState settings) for every case: traffic x slots, limited pools, the clock."""
    traffics = [("chapter", CHAPTER), ("worked", WORKED), *((f"seed{s}", {"seed": s}) for s in SEEDS)]
    traffics += [(key, dict(values)) for key, (_label, values) in story.LESSONS.items()]
    cases = [(f"{name}-{slots}", {**settings, "slots": slots}) for name, settings in traffics for slots in SLOTS]
    for name, settings in (("chapter", CHAPTER), ("seed4", {"seed": 4}), ("seed23", {"seed": 23})):
        for slots in SLOTS:
            cases.append((f"{name}-{slots}-paged10", {**settings, "slots": slots, "kv_blocks": 10, "window": 96}))
            cases.append((f"{name}-{slots}-contiguous14", {**settings, "slots": slots, "kv_blocks": 14,
                                                            "allocation": "contiguous"}))  # fmt: skip
    for name, settings in (("chapter", CHAPTER), ("seed0", {"seed": 0}), ("seed17", {"seed": 17})):
        for slots in (1, 4, 8):
            cases.append((f"{name}-{slots}-clock", {**settings, "slots": slots, "clock": "ms"}))
    return cases


def _python(state: SimState) -> dict:
    """Return what the oracles build for every mode and step of `state`'s view."""
    out, window, runs = {}, state.window, state.runs
    if state.clock == "ms":
        timed = state.timed_runs()
        for mode, run in timed.items():
            end = max(run.drain_ms, timed[get_policy(mode).versus].drain_ms)
            out[mode] = {
                "panel": list(clock_playback_texts(run, end, window)),
                "loop": list(clock_loop_texts(run, clock_times(end, window))),
            }
        return out
    pool = state.pool
    view = BatchView(state=state)
    for mode, run in runs.items():
        first, second = compact_pair(runs, mode)
        batches = []
        for t in range(window):
            with param.parameterized.discard_events(state):  # the view's own refresh would build each one twice
                state.param.update(mode=mode, step=t)
            batches.append(view.html())
        out[mode] = {
            "panel": list(playback_texts(run, window, pool)),
            "loop": list(loop_texts(run, window, pool is not None)),
            "batch": batches,
            "h2h": h2h_compact(runs[first], runs[second], window, None),
        }
    return out


@pytest.fixture(scope="module")
def node():
    """The node binary: ./dev installs it from Debian (`nodejs`); the test fails, not skips, without it."""
    path = shutil.which("node")
    assert path, "node is needed for the parity tests: ./dev test installs it (apt-get install nodejs)"
    return path


def test_the_modules_texts_equal_their_oracles_over_the_grid(node, tmp_path):
    """Every case, every mode, every step: node's app/web/ texts equal tests/oracles/'s Python, to the character."""
    cases, wanted = [], []
    for name, settings in _grid():
        state = SimState(**settings)
        clock = state.clock == "ms"
        what = ["panel", "loop"] if clock else ["panel", "loop", "batch", "h2h"]
        cases.append(
            {
                "view": view_json(view_key(state, 16)),
                "config": {"batch": batch_config()},
                "modes": list(state.runs),
                "steps": list(range(state.window)),
                "what": what,
            }
        )
        wanted.append((name, _python(state)))
    path = tmp_path / "cases.json"
    path.write_text(json.dumps(cases), encoding="utf-8")
    proc = subprocess.run([node, str(HARNESS), str(path)], capture_output=True, text=True, check=False)
    assert proc.returncode == 0, proc.stderr[-2000:]
    got = json.loads(proc.stdout)
    assert len(got) == len(wanted) > 100
    for texts, (name, want) in zip(got, wanted):
        for mode, parts in want.items():
            for part, value in parts.items():
                assert texts[mode][part] == value, (
                    f"{name}, {mode}, {part}: {_first_difference(texts[mode][part], value)}"
                )


def _first_difference(got, want) -> str:
    if isinstance(want, str):
        got, want = [got], [want]
    for k, (a, b) in enumerate(zip(got, want)):
        if a != b:
            at = next(j for j in range(min(len(a), len(b)) + 1) if a[j : j + 1] != b[j : j + 1])
            return f"step {k}, char {at}\n js: …{a[max(0, at - 60) : at + 100]}\n py: …{b[max(0, at - 60) : at + 100]}"
    return f"lengths {len(got)} != {len(want)}"


def test_the_harness_fails_on_a_wrong_text(node, tmp_path):
    """The comparison can fail: a view whose run is changed gives another readout than its oracle's."""
    state = SimState(seed=4, slots=4)
    view = json.loads(view_json(view_key(state, 16)))
    view["runs"]["continuous"]["finish"][0] += 1
    path = tmp_path / "cases.json"
    case = {"view": json.dumps(view), "config": {"batch": batch_config()}, "modes": ["continuous"],
            "steps": [state.window - 1], "what": ["panel"]}  # fmt: skip
    path.write_text(json.dumps([case]), encoding="utf-8")
    got = json.loads(subprocess.run([node, str(HARNESS), str(path)], capture_output=True, text=True, check=True).stdout)
    assert got[0]["continuous"]["panel"] != list(playback_texts(state.runs["continuous"], state.window, None))[-1:]


def test_the_memory_tabs_modes_equal_their_oracle_at_every_pool_and_step(node, tmp_path):
    """The Memory tab at every pool size its slider offers and every step: tabs/memory.js's HTML is the oracle's."""
    from app.memory.data import memory_json
    from app.memory.lesson import MAX_BLOCKS, MIN_BLOCKS, MODES, runs_for
    from tests.oracles.memory_view import mode_html

    cases, wanted = [], []
    for blocks in range(MIN_BLOCKS, MAX_BLOCKS + 1):
        data = memory_json(blocks)
        width = json.loads(data)["width"]
        cases.append({"memory": data, "steps": list(range(width))})
        runs = runs_for(blocks)
        wanted.append(["".join(mode_html(m, runs[m], t, width, blocks) for m in MODES) for t in range(width)])
    path = tmp_path / "memory.json"
    path.write_text(json.dumps(cases), encoding="utf-8")
    proc = subprocess.run([node, str(HARNESS), str(path)], capture_output=True, text=True, check=False)
    assert proc.returncode == 0, proc.stderr[-2000:]
    got = json.loads(proc.stdout)
    assert sum(len(steps) for steps in got) > 400
    for blocks, (texts, want) in enumerate(zip(got, wanted), start=MIN_BLOCKS):
        assert texts == want, f"{blocks} blocks: {_first_difference(texts, want)}"
    decided = [t for t, text in enumerate(got[0]) if "preempted" in text or "waits for memory" in text]
    assert decided  # the smallest pool makes memory decide: the comparison covers the log's words


def test_the_static_caption_says_the_batch_timeout_where_one_runs(node, tmp_path):
    """The worked example's static batch waits for more arrivals (timeout 1): its caption says so, and only there.

    At step 0 A, B and C have arrived and every slot is free, yet static starts at step 1: without the note, "a batch
    forms only when every slot is free" would be false beside it.
    """
    worked_state, plain = SimState(**WORKED), SimState(**CHAPTER)
    static = worked_state.runs["static"]
    assert min(static.start) == 1 and min(static.arrival) == 0  # the wait the note explains
    cases = [
        {
            "view": view_json(view_key(state, 16)),
            "config": {},
            "modes": ["static", "continuous"],
            "steps": [],
            "what": ["timeout"],
        }  # fmt: skip
        for state in (worked_state, plain)
    ]
    path = tmp_path / "captions.json"
    path.write_text(json.dumps(cases), encoding="utf-8")
    got = json.loads(subprocess.run([node, str(HARNESS), str(path)], capture_output=True, text=True, check=True).stdout)
    assert "at most 1 step after its oldest request arrived (the batch timeout)" in got[0]["static"]["timeout"]
    assert got[0]["continuous"]["timeout"] == ""  # continuous batching has no batch to wait for
    assert got[1]["static"]["timeout"] == ""  # the chapter's traffic runs without a timeout
