"""The clock view's playback: a time cursor, and every figure at it counted from the core's timed run in ms."""

import re

import numpy as np

from app.simulator.state import SimState
from app.simulator.views import h2h_timed_rows
from core.sched.timed import timed_metrics
from tests.oracles.loop_view import clock_loop_texts
from tests.oracles.progress import clock_progress_table, clock_times

FRAMES = 64


def _runs():
    state = SimState(seed=4, clock="ms")
    static, continuous = state.timed_runs()["static"], state.timed_runs()["continuous"]
    return static, continuous, max(static.drain_ms, continuous.drain_ms)


def _tokens_out_by(run, t: float) -> int:
    """Count, request by request, the passes that emitted one of its tokens by time t (the slow way)."""
    ends = run.pass_end_ms
    return sum(int((ends[s:f] <= t).sum()) for s, f in zip(run.start_pass.tolist(), run.finish_pass.tolist()))


def test_the_cursor_moves_in_time_and_the_figures_follow_it():
    """Each frame's time grows to the later drain; completed and tokens out are what the core's passes emitted."""
    static, continuous, end = _runs()
    times = clock_times(end, FRAMES)
    assert np.all(np.diff(times) > 0) and times[-1] == end
    for run in (static, continuous):
        table = clock_progress_table(run, times)
        for k in (0, 5, 31, FRAMES - 1):
            t = times[k]
            assert f'data-ms="{t:.3f}"' in table["readout"][k] and " ms" in table["readout"][k]
            done = int((run.finish_ms <= t).sum())
            assert f'data-stat="completed">{done}/{len(run.requests)}<' in table["stats"][k]
            assert f'data-stat="useful_tokens">{_tokens_out_by(run, t)}<' in table["stats"][k]
        assert "(steps)" not in "".join(table["stats"])  # on a clock no figure is in steps
    last = clock_progress_table(continuous, times)["stats"][-1]
    assert f'data-stat="completed">{len(continuous.requests)}/' in last  # the end of the axis is past its drain


def test_the_loop_on_a_clock_lights_the_pass_under_the_cursor():
    """Past a mode's drain nothing runs: only the loop's head is lit; inside a pass, its rows are built."""
    static, continuous, end = _runs()
    texts = clock_loop_texts(continuous, clock_times(end, FRAMES))
    assert continuous.drain_ms < end
    lit = re.findall(r'bv-lit" data-line="(\w+)"', texts[-1])
    assert lit == ["head"] and "between passes" in texts[-1]
    first = clock_loop_texts(continuous, [float(continuous.pass_start_ms[0]) + 1e-6])[0]
    assert "pass 1 (" in first and re.findall(r'bv-lit" data-line="(\w+)"', first)[-1] == "forward"


def test_the_head_to_head_on_a_clock_is_all_in_ms():
    """The head-to-head's rows on a clock are timed_metrics' figures, and none of them is in steps."""
    static, continuous, _end = _runs()
    s, c = timed_metrics(static), timed_metrics(continuous)
    rows = {key: (a, b) for key, _label, a, b in h2h_timed_rows(s, c, len(static.requests))}
    assert rows["drain_ms"] == (f"{s.drain_ms:,.1f}", f"{c.drain_ms:,.1f}")
    assert rows["e2e_mean"] == (f"{s.e2e_ms['mean']:,.1f}", f"{c.e2e_ms['mean']:,.1f}")
    assert all("steps" not in label for _key, label, _a, _b in h2h_timed_rows(s, c, 12))


def test_at_the_end_each_card_shows_the_head_to_head_s_tokens_per_s():
    """At the axis's end both cards read tokens over their own run (the head-to-head's figure), not one equal rate.

    The sentences-true issue, item 5: counted to the axis's end, both cards showed the same tokens/s (the same tokens
    over the same time) while the head-to-head beside them showed continuous ahead.
    """
    for seed in (0, 4, 7):
        state = SimState(seed=seed, clock="ms")
        timed = state.timed_runs()
        end = max(timed["static"].drain_ms, timed["continuous"].drain_ms)
        shown = {}
        for policy in ("static", "continuous"):
            last = clock_progress_table(timed[policy], clock_times(end, FRAMES))["stats"][-1]
            shown[policy] = re.search(r'data-stat="tokens_per_s">([\d,]+)<', last).group(1)
            assert shown[policy] == f"{timed_metrics(timed[policy]).tokens_per_s:,.0f}", (seed, policy)
        assert shown["static"] != shown["continuous"]
