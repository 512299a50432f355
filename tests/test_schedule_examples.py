"""Worked examples with hand-checked timelines, one per rule of docs/design.md's "Simulator semantics"."""

import numpy as np
import pytest

from core import simulate
from core.sched.run import Run

from .helpers import make_requests


def _rows(run: Run, width: int | None = None) -> list[str]:
    return run.timeline_strings(width)


def test_continuous_refills_a_slot_the_step_it_frees():
    """A finishes at 3; C (waiting) takes slot 0 before step 3, and B keeps slot 1."""
    run = simulate(make_requests((0, 3), (0, 5), (1, 2)), 2, "continuous")
    assert _rows(run) == ["GGGGG", "GGGGG"]
    assert run.start.tolist() == [0, 0, 3]
    assert run.slot.tolist() == [0, 1, 0]
    assert run.finish.tolist() == [3, 5, 5]


def test_static_pads_until_the_longest_member_finishes():
    """A (3 tokens) pads slot 0 while B (5) runs; C waits for the whole batch."""
    run = simulate(make_requests((0, 3), (0, 5), (1, 2)), 2, "static")
    assert _rows(run) == ["GGGPPGG", "GGGGG.."]
    assert run.start.tolist() == [0, 0, 5]
    assert run.release.tolist() == [5, 5, 7]


def test_static_timeout_zero_starts_with_whoever_waits():
    """With batch_timeout 0, a lone request starts at once; slots empty at formation stay idle all batch."""
    run = simulate(make_requests((2, 2), (3, 1)), 3, "static")
    assert _rows(run) == ["..GGG", ".....", "....."]
    assert run.start.tolist() == [2, 4]


def test_static_timeout_waits_for_a_fuller_batch():
    """Timeout 3: A waits; B arrives at 2 but 3 slots are not full, so the batch forms when A has waited 3."""
    run = simulate(make_requests((0, 2), (2, 4), (9, 1)), 3, "static", batch_timeout=3)
    assert run.start.tolist() == [3, 3, 9]
    assert _rows(run) == ["...GGPP..G", "...GGGG...", ".........."]


def test_static_forms_a_full_batch_before_the_timeout():
    """Two slots, timeout 10: the batch forms at step 1, when the second request arrives and fills it."""
    run = simulate(make_requests((0, 1), (1, 1)), 2, "static", batch_timeout=10)
    assert run.start.tolist() == [1, 1]


def test_static_forms_when_no_more_requests_will_arrive():
    """Timeout 100 but nobody else comes: the batch forms when the last request has arrived."""
    run = simulate(make_requests((0, 2), (4, 2)), 3, "static", batch_timeout=100)
    assert run.start.tolist() == [4, 4]


def test_fcfs_ties_keep_trace_order():
    """Equal arrivals are admitted in trace order: A (first in the file) gets the free slot, C waits for it."""
    run = simulate(make_requests((5, 1), (0, 9), (5, 1)), 2, "continuous")
    assert run.slot.tolist() == [1, 0, 1]
    assert run.start.tolist() == [5, 0, 6]
    both_free = simulate(make_requests((3, 2), (3, 2)), 2, "continuous")
    assert both_free.slot.tolist() == [0, 1]


@pytest.mark.parametrize("policy", ["static", "continuous"])
def test_no_requests_gives_an_empty_run(policy):
    """Zero requests: drain 0, an empty timeline, and metrics without division by zero."""
    run = simulate([], 3, policy)
    assert run.drain == 0 and run.timeline.shape == (3, 0)
    assert _rows(run, 4) == ["....", "....", "...."]


def test_decision_log_reads_like_the_chapter():
    """The log says who finished, which slot freed, and who was admitted where."""
    run = simulate(make_requests((0, 2), (0, 4), (1, 3)), 2, "continuous")
    assert run.describe_step(0) == "step 0: A admitted to slot 0; B admitted to slot 1"
    assert run.describe_step(2) == "step 2: A finished, slot 0 freed; C admitted to slot 0"
    assert run.describe_step(3) == "step 3: no change"
    static = simulate(make_requests((0, 2), (0, 4)), 2, "static")
    assert static.describe_step(2) == "step 2: A finished, slot 0 now padding"
    assert static.describe_step(4) == "step 4: B finished, slot 1 freed; slot 0 released (A's padding ends)"


@pytest.mark.parametrize("policy", ["static", "continuous"])
def test_bad_arguments_name_the_field(policy):
    """Slots, policy and timeout are validated with a message naming what is allowed."""
    reqs = make_requests((0, 1))
    with pytest.raises(ValueError, match="slots must be an integer in 1..4096"):
        simulate(reqs, 0, policy)
    with pytest.raises(ValueError, match="batch_timeout must be an integer in 0..2,000,000,000"):
        simulate(reqs, 1, policy, batch_timeout=-1)
    with pytest.raises(ValueError, match="policy must be one of static, continuous"):
        simulate(reqs, 1, "greedy")


def test_arrays_follow_the_order_given_not_arrival_order():
    """Run arrays are indexed like the input list even when the trace is not sorted by arrival."""
    reqs = make_requests((7, 1), (0, 2))
    run = simulate(reqs, 1, "continuous")
    assert run.start.tolist() == [7, 0]
    assert np.array_equal(run.finish, run.start + np.array([1, 2]))
