"""Serving figures (TTFT, ITL, TPOT, stalls, goodput, SLO attainment, fairness), each worked by hand on a tiny run."""

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from core import Request
from core.clock.cost import UnitCost
from core.kv.memory import MemoryConfig
from core.measure.serving import emitting_passes, jain_index, per_request, serving_metrics
from core.sched.engine import schedule
from core.sched.timed import as_timed, simulate_timed

# One slot, first come first served: A (3 tokens) runs passes 0-2, B (2 tokens) passes 3-4; a pass lasts 1.
A_THEN_B = [Request("A", 0, 3), Request("B", 0, 2)]


def test_the_worked_example_by_hand():
    """A: first token at 1, gaps 1 and 1, done at 3 (alone 3). B: first token at 4, gap 1, done at 5 (alone 2).

    TPOT: A (3 - 1) / 2 = 1, B (5 - 4) / 1 = 1; each one's longest stall 1. Slowdowns 1 and 2.5: Jain's index
    (3.5)^2 / (2 (1 + 6.25)) = 0.8448. Targets TTFT <= 2 and mean TPOT <= 1: A meets them, B misses its TTFT:
    attainment 1/2, goodput 1 request in 5 steps = 0.2 a step; throughput 5 tokens / 5.
    """
    run = simulate_timed(A_THEN_B, 1, "continuous", UnitCost())
    r = per_request(run, UnitCost())
    assert r.ttft.tolist() == [1, 4] and r.tpot.tolist() == [1, 1] and r.latency.tolist() == [3, 5]
    assert r.stall.tolist() == [1, 1]
    assert r.wait.tolist() == [0, 3] and r.slowdown.tolist() == [1.0, 2.5]
    s = serving_metrics(run, UnitCost(), ttft_target=2, itl_target=1)
    assert (s.met, s.slo_attainment, s.goodput, s.throughput) == (1, 0.5, 0.2, 1.0)
    assert s.fairness == pytest.approx(12.25 / 14.5) and s.ttft_p50 == 1 and s.ttft_p99 == 4
    assert (s.itl_p50, s.itl_p99, s.latency_p50, s.latency_p99, s.preemptions) == (1, 1, 3, 5, 0)
    assert (s.tpot_p50, s.tpot_p99, s.stall_p99, s.stall_max) == (1, 1, 1, 1)
    # Shortest first runs B first: B's first token at 1, A's at 3 (slowdowns 5/3 and 1): both meet TTFT <= 3.
    sjf = serving_metrics(simulate_timed(A_THEN_B, 1, "sjf", UnitCost()), UnitCost(), 3, 1)
    assert sjf.met == 2 and sjf.fairness == pytest.approx((5 / 3 + 1) ** 2 / (2 * (25 / 9 + 1)))


def test_goodput_is_per_second_on_a_clock():
    """A pass of 10 ms: the same run drains at 50 ms, so one request met is 20 requests a second."""

    class TenMs:
        name = "ten"

        def pass_ms(self, rows, prefill_tokens, context_tokens):
            return 10.0 + 0 * np.asarray(rows, dtype=float)

    run = simulate_timed(A_THEN_B, 1, "continuous", TenMs())
    s = serving_metrics(run, TenMs(), ttft_target=20, itl_target=10)
    assert run.drain_ms == 50 and s.met == 1 and s.goodput == pytest.approx(20.0) and s.throughput == 100.0


def test_jain_index_bounds():
    """All equal: 1; one of n with everything: 1/n."""
    assert jain_index([2, 2, 2]) == 1.0 and jain_index([0, 0, 0, 5]) == 0.25


@settings(max_examples=80, deadline=None)
@given(
    st.lists(st.tuples(st.integers(0, 10), st.integers(1, 12), st.integers(0, 12)), min_size=1, max_size=12),
    st.integers(1, 3),
    st.integers(0, 3),
)
def test_every_token_is_emitted_once_even_across_preemptions(rows, slots, extra):
    """On a tight pool (preemptions, recomputes): each request emits in exactly `output_tokens` passes, in order."""
    reqs = [Request(f"r{i}", a, o, p) for i, (a, o, p) in enumerate(rows)]
    need = max(-(-(max(1, r.prompt_tokens) + max(o for _, o, _ in rows)) // 4) for r in reqs)
    run = as_timed(schedule(reqs, slots, "continuous", MemoryConfig(kv_blocks=need + extra, block_size=4), UnitCost()))
    for r, passes in zip(reqs, emitting_passes(run)):
        assert len(passes) == r.output_tokens and (np.diff(passes) > 0).all()
    s = serving_metrics(run, UnitCost(), ttft_target=1e9, itl_target=1e9)
    assert s.met == len(reqs) and 0 < s.fairness <= 1


def test_compare_prints_and_writes_the_serving_figures(tmp_path, capsys):
    """`compare --ttft-target --itl-target`: the hand-worked figures per policy, in text and JSON.

    One target alone is refused in one line.
    """
    import json

    from core.cli.commands import main

    trace = tmp_path / "ab.csv"
    trace.write_text("arrival,output_tokens\n0,3\n0,2\n")
    argv = ["compare", "--trace", str(trace), "--slots", "1", "--policies", "continuous,sjf"]
    assert main([*argv, "--ttft-target", "2", "--itl-target", "1", "--json"]) == 0
    doc = json.loads(capsys.readouterr().out)["serving"]
    assert doc["unit"] == "steps" and doc["continuous"]["met"] == 1 and doc["continuous"]["goodput"] == 0.2
    assert doc["sjf"]["ttft_p99"] == 3 and doc["continuous"]["fairness"] == pytest.approx(12.25 / 14.5, abs=1e-6)
    assert main([*argv, "--ttft-target", "2", "--itl-target", "1"]) == 0
    out = capsys.readouterr().out
    assert "SLO attainment                    50.0%       50.0%" in out  # sjf: B at 1, A at 3
    assert main([*argv, "--ttft-target", "2"]) == 2
    assert "--ttft-target and --itl-target go together" in capsys.readouterr().err
