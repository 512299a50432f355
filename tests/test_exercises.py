"""The exercises' core: presets, the knee on a hand-built cost model, the length-spread study, the temperature bug."""

import numpy as np
import pytest

from core import compare, generate, simulate
from core.hardware import ACCELERATORS, MODEL_SHAPES, cost_model
from core.spread import SPREAD_SLOTS, SPREAD_TRAFFIC, spread_study
from core.sweep import CostModel, knee, sweep, weighted_percentiles
from core.temperature_bug import ROWS, run_rows

# One weight byte per parameter, 1 GB at 1,000 GB/s is 1 ms; 2 FLOP per parameter per row at 0.4 TFLOP/s is 5 ms per
# row. So a full batch of b rows steps in max(1, 5b) = 5b ms: at a 50 ms target the knee is batch 8 (40 ms).
HAND = CostModel(params_b=1, bytes_per_param=1, kv_bytes_per_token=0, mem_bw_gbs=1000, tflops=0.4, overhead_ms=0)
BATCHES = (1, 2, 4, 8, 16, 32)


def test_the_default_cost_model_is_the_default_presets():
    """CostModel() is Llama-2 7B on an H100 SXM; KV bytes per token follow the shapes (GQA included)."""
    assert CostModel() == cost_model()
    assert MODEL_SHAPES["llama2-7b"].kv_bytes_per_token == 2 * 32 * 32 * 128 * 2 == 524_288
    assert MODEL_SHAPES["llama3-8b"].kv_bytes_per_token == 131_072  # 8 KV heads: a quarter of the cache
    assert len(ACCELERATORS) >= 3 and len(MODEL_SHAPES) >= 2
    with pytest.raises(ValueError, match="accelerator must be one of"):
        cost_model("TPU v9")


def test_the_knee_on_a_hand_built_cost_model():
    """Saturated, ITL p99 is 5b ms and the knee is 8; a light load never fills a big batch, so the knee moves up."""
    saturated = sweep(1e4, BATCHES, HAND, itl_target_ms=50)
    assert [p.step_ms for p in saturated] == [5.0 * b for b in BATCHES]
    assert [p.itl_p99_ms for p in saturated] == [5.0 * b for b in BATCHES]
    assert knee(saturated).batch == 8
    assert knee(sweep(1e4, BATCHES, HAND, itl_target_ms=100)).batch == 16  # a looser target pushes it up
    assert knee(sweep(1e4, BATCHES, HAND, itl_target_ms=4)) is None
    light = sweep(0.5, BATCHES, HAND, itl_target_ms=50)
    assert knee(light).batch == 32 and max(p.itl_p99_ms for p in light) <= 50


def test_weighted_percentiles():
    """Each value counts its weight's times; zero weights count for nothing."""
    values, weights = np.array([3.0, 1.0, 2.0, 9.0]), np.array([1, 97, 2, 0])
    assert weighted_percentiles(values, weights, (50, 99, 100)) == (1.0, 2.0, 3.0)
    assert weighted_percentiles(np.array([]), np.array([]), (50,)) == (0.0,)


def test_the_spread_study_equals_compare_on_the_same_traffic():
    """Each kind's ratios are compare's on that kind's requests; the arrivals are shared; fixed lengths pad nothing."""
    cases = spread_study(1.2)
    arrivals = None
    for case in cases:
        requests = generate(SPREAD_TRAFFIC.__class__(**{**vars(SPREAD_TRAFFIC), "lengths": case.kind}))
        result = compare(simulate(requests, SPREAD_SLOTS, "static"), simulate(requests, SPREAD_SLOTS, "continuous"))
        assert case.drain_ratio == result.drain_ratio
        assert case.padding_share == result.static.padding_share
        assert case.lengths.tolist() == [r.output_tokens for r in requests]
        mine = [r.arrival for r in requests]
        assert arrivals is None or mine == arrivals
        arrivals = mine
    heavy, uniform, fixed = cases
    assert fixed.padding_share == 0 and np.all(fixed.batch_ratios == 1)
    assert heavy.drain_ratio > uniform.drain_ratio > fixed.drain_ratio


def test_a_narrower_spread_pays_less():
    """The heavy-tailed advantage shrinks with sigma."""
    ratios = [spread_study(sigma)[0].drain_ratio for sigma in (2.0, 1.2, 0.5, 0.1)]
    assert ratios == sorted(ratios, reverse=True)


def test_one_temperature_breaks_the_greedy_row():
    """Without the bug the greedy row draws one token every time; with it, it samples. The first row is unchanged."""
    correct, buggy = run_rows(bug=False), run_rows(bug=True)
    greedy = [label for label, _ in ROWS].index("greedy")
    assert len(set(correct.draws[:, greedy])) == 1
    assert len(set(buggy.draws[:, greedy])) > 1
    assert buggy.changed_rows(correct) == [1, 2]
    assert np.array_equal(correct.draws[:, 0], buggy.draws[:, 0])  # its own temperature either way
    again = run_rows(bug=False)
    assert np.array_equal(again.draws, correct.draws)  # seeded: the same draws every time
