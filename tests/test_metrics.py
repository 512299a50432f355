"""Metrics over a window, checked against counts taken from the timeline itself."""

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from core import GENERATING, PADDING, compare, compute_metrics, simulate

from .helpers import make_requests, requests_strategy


def test_worked_example_static():
    """Static, 2 slots: A(0,3) B(0,5) C(1,2); hand-computed over a 6-step window."""
    run = simulate(make_requests((0, 3), (0, 5), (1, 2)), 2, "static")
    m = compute_metrics(run, 6)
    assert (m.completed, m.useful_tokens) == (2, 9)  # A, B finish by 6; C has 1 of its 2 tokens
    assert m.utilisation == pytest.approx(9 / 12)
    assert m.padding_share == pytest.approx(2 / 12)
    assert m.idle_share == pytest.approx(1 / 12)
    assert (m.avg_latency, m.p50_latency) == (4.0, 4.0)  # A: 3, B: 5
    assert m.drain_steps == 7 and m.throughput == pytest.approx(10 / 7)


@settings(max_examples=100, deadline=None)
@given(requests_strategy, st.integers(1, 5), st.sampled_from(["static", "continuous"]), st.integers(0, 60))
def test_shares_match_the_timeline(reqs, slots, policy, window):
    """Useful tokens and padding equal the G and P cells in [0, W); the three shares sum to 1."""
    run = simulate(reqs, slots, policy)
    m = compute_metrics(run, window)
    grid = run.timeline[:, :window]
    assert m.useful_tokens == (grid == GENERATING).sum()
    if window:
        assert m.padding_share == pytest.approx((grid == PADDING).sum() / (window * slots))
        assert m.utilisation + m.padding_share + m.idle_share == pytest.approx(1.0)
    assert m.completed == sum(1 for f in run.finish if f <= window)


def test_compare_ratios_on_the_chapter_shape():
    """Continuous beats static on heavy-tailed traffic; ratios are static/continuous drains."""
    reqs = make_requests((0, 1), (0, 1), (0, 1), (0, 20), (0, 1), (0, 1), (0, 1), (0, 20))
    result = compare(simulate(reqs, 4, "static"), simulate(reqs, 4, "continuous"))
    assert result.static.drain_steps == 40 and result.continuous.drain_steps == 22  # H starts at 2
    assert result.drain_ratio == pytest.approx(40 / 22)
    assert result.throughput_ratio == pytest.approx(40 / 22)
    assert result.continuous.padding_share == 0 and result.static.padding_share > 0.4


def test_compare_rejects_different_traffic():
    """Comparing runs of different traffic is refused."""
    with pytest.raises(ValueError, match="same requests"):
        compare(simulate(make_requests((0, 1)), 1, "static"), simulate(make_requests((0, 2)), 1, "continuous"))
