"""Simulation on a clock: hand-checked times, unit cost equals the step simulator, the per-pass oracle agrees."""

from dataclasses import dataclass, replace

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from core import Request, simulate
from core.clock.cost import Fitted, Roofline, UnitCost
from core.sched.timed import simulate_timed, timed_metrics
from tests.oracles.pass_loop import simulate_per_pass

from .helpers import check_timed_invariants

FIELDS = ("slot", "start_pass", "finish_pass", "release_pass", "pass_start_ms", "pass_end_ms", "pass_rows",
          "pass_prefill", "pass_context")  # fmt: skip
FITTED = Fitted(
    rows=(1, 8, 64),
    prefill_tokens=(0, 512),
    context_tokens=(0, 4096, 65536),
    ms=(((2, 3, 9), (6, 7, 12)), ((3, 4, 10), (7, 8, 13)), ((8, 9, 20), (12, 14, 25))),
)
RECTANGLES = replace(FITTED, name="fitted (static)", prefill_rows=True)  # static's own profile, as calibrate makes it
WAKING = replace(FITTED, wake_ms=5.0, wake_gap_ms=10.0)  # an engine that pays for idling, as calibrate measures it


@dataclass(frozen=True)
class Linear:
    """A hand-checkable cost: 10 ms, plus 2 per decoding row, plus 0.5 per prompt token."""

    name: str = "linear"

    def pass_ms(self, rows, prefill_tokens, context_tokens):
        """Return the hand-checkable time."""
        return 10 + 2 * np.asarray(rows) + 0.5 * np.asarray(prefill_tokens)


TWO = [Request("A", 0, 3, 4), Request("B", 5, 2, 2)]


def test_two_requests_by_hand_continuous():
    """A prefills alone (12 ms); B, arrived at 5, joins the next pass (decode A + prefill B: 13 ms); both decode."""
    run = simulate_timed(TWO, 2, "continuous", Linear())
    assert run.pass_start_ms.tolist() == [0, 12, 25]
    assert run.pass_end_ms.tolist() == [12, 25, 39]
    assert run.start_ms.tolist() == [0, 12] and run.finish_ms.tolist() == [39, 39]
    m = timed_metrics(run)
    assert m.ttft_ms["mean"] == (12 + (25 - 5)) / 2
    assert m.e2e_ms["p99"] == 39 - 0 and m.drain_ms == 39
    assert m.tokens_per_s == pytest.approx(5 / 0.039)
    assert m.itl_ms["p50"] == 14  # A's 2nd token in 13 ms, A's 3rd and B's 2nd in 14 ms


def test_two_requests_by_hand_static():
    """A's batch forms alone at 0 (timeout 0) and runs 3 passes to 36; B waits for it, then runs to 59."""
    run = simulate_timed(TWO, 2, "static", Linear())
    assert run.pass_end_ms.tolist() == [12, 24, 36, 47, 59]
    assert run.start_ms.tolist() == [0, 36] and run.finish_ms.tolist() == [36, 59]
    waited = simulate_timed(TWO, 2, "static", Linear(), batch_timeout_ms=5)
    assert waited.start_ms.tolist() == [5, 5]  # A waits 5 ms for B: one batch, a padded rectangle of 2 rows
    assert waited.pass_prefill.tolist()[0] == 2 * 4


requests_st = st.lists(
    st.builds(
        Request,
        id=st.just("r"),
        arrival=st.integers(0, 60),
        output_tokens=st.integers(1, 25),
        prompt_tokens=st.integers(0, 40),
    ),
    min_size=1,
    max_size=30,
)


@settings(max_examples=150, deadline=None)
@given(requests_st, st.integers(1, 6), st.sampled_from(["static", "continuous"]), st.integers(0, 6))
def test_unit_cost_equals_the_step_simulator(requests, slots, policy, timeout):
    """Under UnitCost every start, finish and release time is the step simulator's step, and every slot the same."""
    timeout = timeout if policy == "static" else 0
    steps = simulate(requests, slots, policy, timeout)
    timed = simulate_timed(requests, slots, policy, UnitCost(), timeout)
    assert timed.start_ms.tolist() == steps.start.tolist()
    assert timed.finish_ms.tolist() == steps.finish.tolist()
    assert timed.release_ms.tolist() == steps.release.tolist()
    assert timed.slot.tolist() == steps.slot.tolist()


@settings(max_examples=150, deadline=None)
@given(
    requests_st,
    st.integers(1, 6),
    st.sampled_from(["static", "continuous"]),
    st.floats(0, 40),
    st.sampled_from(
        [
            Roofline(),
            Roofline(params_b=70, tflops=1, overhead_ms=0),
            FITTED,
            RECTANGLES,
            WAKING,
            replace(RECTANGLES, wake_ms=0.3, wake_gap_ms=25.0),
            UnitCost(),
        ]
    ),
)
def test_the_event_loop_equals_the_per_pass_oracle(requests, slots, policy, timeout, cost):
    """The fast loop and the per-pass, every-slot loop give the same schedule and the same clock, bit for bit."""
    fast = simulate_timed(requests, slots, policy, cost, timeout)
    oracle = simulate_per_pass(requests, slots, policy, cost, timeout)
    for field in FIELDS:
        assert np.array_equal(getattr(fast, field), getattr(oracle, field)), field


@settings(max_examples=100, deadline=None)
@given(requests_st, st.integers(1, 6), st.sampled_from([Roofline(), FITTED]))
def test_timed_invariants(requests, slots, cost):
    """Nobody starts before arriving; tokens are conserved; continuous never leaves a slot idle while one waits."""
    for policy in ("static", "continuous"):
        check_timed_invariants(simulate_timed(requests, slots, policy, cost))


def test_the_roofline_by_hand():
    """Decode of 8 rows over 8,000 cached tokens is memory-bound; a 4,096-token prefill is compute-bound."""
    model = Roofline(params_b=7, bytes_per_param=2, kv_bytes_per_token=500_000, mem_bw_gbs=2000, tflops=200,
                     overhead_ms=1)  # fmt: skip
    # (14e9 + 8,000 x 5e5 bytes) / 2e12 B/s = 9 ms, against 2 x 7e9 x 8 / 2e14 = 0.56 ms of compute; plus 1
    assert model.pass_ms(8, 0, 8000) == pytest.approx(10.0)
    # 2 x 7e9 x 4,096 / 2e14 = 286.72 ms of compute, against 7 ms of weights; plus 1
    assert model.pass_ms(0, 4096, 0) == pytest.approx(287.72)


def test_a_profile_round_trips_and_interpolates(tmp_path):
    """Saved and loaded, a profile is equal; grid points are the table; midpoints are linear; past the grid it grows."""
    path = FITTED.save(tmp_path / "profile.json")
    loaded = Fitted.load(path)
    assert loaded == FITTED
    assert loaded.pass_ms(8, 512, 4096) == 8
    assert loaded.pass_ms(1, 0, 2048) == pytest.approx(2.5)
    assert loaded.pass_ms(128, 0, 0) > loaded.pass_ms(64, 0, 0)
    (tmp_path / "bad.json").write_text('{"kind": "fitted", "rows": [1]}')
    with pytest.raises(ValueError, match="needs rows, prefill_tokens, context_tokens and ms"):
        Fitted.load(tmp_path / "bad.json")
    with pytest.raises(ValueError, match="not a batchviz profile"):
        Fitted.load(path.with_name("x.json").write_text("[]") and path.with_name("x.json"))


def test_static_s_own_profile_prices_a_prompt_pass_by_the_rows_it_holds(tmp_path):
    """Round 4, the replay's prediction: a batch of one prefills as one row, not as a full batch's prompt spread thin.

    Every loop asks the same (the fast loop, the memory engine, the per-pass oracle); a decode pass is unchanged, and
    the profile keeps the flag through a save and a load.
    """
    from core.kv.memory import MemoryConfig

    one = [Request("A", 0, 3, prompt_tokens=256)]
    plain, rect = (simulate_timed(one, 4, "static", cost) for cost in (FITTED, RECTANGLES))
    assert plain.pass_end_ms[0] == FITTED.pass_ms(0, 256, 0)  # rows 0: the grid's first row, extrapolated
    assert rect.pass_end_ms[0] == FITTED.pass_ms(1, 256, 0)  # the rectangle's one row
    assert rect.pass_rows.tolist() == plain.pass_rows.tolist() == [0, 1, 1]  # recorded: decoding rows, as before
    assert np.diff(rect.pass_end_ms)[1:].tolist() == np.diff(plain.pass_end_ms)[1:].tolist()  # decode unchanged
    engine = simulate_timed(one, 4, "static", RECTANGLES, memory=MemoryConfig(kv_blocks=1000, block_size=16))
    assert engine.pass_end_ms.tolist() == rect.pass_end_ms.tolist()
    assert simulate_per_pass(one, 4, "static", RECTANGLES).pass_end_ms.tolist() == rect.pass_end_ms.tolist()
    assert Fitted.load(RECTANGLES.save(tmp_path / "static.json")).prefill_rows is True
    (tmp_path / "bad.json").write_text((tmp_path / "static.json").read_text().replace("true", '"yes"'))
    with pytest.raises(ValueError, match="prefill_rows must be true or false, got a str"):
        Fitted.load(tmp_path / "bad.json")


def test_a_pass_after_an_idle_gap_pays_the_profile_s_wake(tmp_path):
    """Round 4, the replay's prediction: an engine that slept runs its next pass slower, as calibrate measured.

    A pass that starts g ms after the previous one ended (or after 0) costs wake_ms * min(1, g / wake_gap_ms) more;
    back-to-back passes pay nothing. Every loop agrees (the fast loops, the memory engine, the per-pass oracle), and
    a profile keeps its wake through a save and a load; one written before the wake was measured has none.
    """
    from core.kv.memory import MemoryConfig

    reqs = [Request("A", 0, 2, prompt_tokens=64), Request("B", 1, 1, prompt_tokens=64), Request("C", 100, 1)]
    for policy in ("continuous", "static"):
        plain, waking = (simulate_timed(reqs, 2, policy, cost) for cost in (FITTED, WAKING))
        extra = np.diff(np.r_[0.0, waking.pass_end_ms]) - np.diff(np.r_[0.0, plain.pass_end_ms])
        idle = waking.pass_start_ms - np.r_[0.0, waking.pass_end_ms[:-1]]
        assert (idle > 0).tolist() == [False] * (waking.passes - 1) + [True]  # only C's pass, at 100, follows a gap
        assert idle[-1] > 10 and extra[:-1] == pytest.approx(0) and extra[-1] == pytest.approx(5.0)
        engine = simulate_timed(reqs, 2, policy, WAKING, memory=MemoryConfig(kv_blocks=1000, block_size=16))
        assert engine.pass_end_ms.tobytes() == waking.pass_end_ms.tobytes()
        assert simulate_per_pass(reqs, 2, policy, WAKING).pass_end_ms.tobytes() == waking.pass_end_ms.tobytes()
    assert WAKING.wake(0) == 0 and WAKING.wake(4) == pytest.approx(2.0) and WAKING.wake(10) == WAKING.wake(500) == 5
    late = simulate_timed([Request("A", 3, 1, prompt_tokens=64)], 1, "continuous", WAKING)  # idle from 0 until 3 ms
    assert late.pass_end_ms[0] == pytest.approx(3 + FITTED.pass_ms(0, 64, 0) + 1.5)
    assert Fitted.load(WAKING.save(tmp_path / "waking.json")) == WAKING
    old = (
        (tmp_path / "waking.json")
        .read_text()
        .replace('"wake_ms": 5.0', '"x": 0')
        .replace('"wake_gap_ms": 10.0', '"y": 0')
    )
    (tmp_path / "old.json").write_text(old)
    assert Fitted.load(tmp_path / "old.json").wake_ms == 0
    (tmp_path / "bad.json").write_text(
        (tmp_path / "waking.json").read_text().replace('"wake_ms": 5.0', '"wake_ms": -1')
    )
    with pytest.raises(ValueError, match=r"wake_ms must be a number in 0\.\.3,600,000, got -1"):
        Fitted.load(tmp_path / "bad.json")
