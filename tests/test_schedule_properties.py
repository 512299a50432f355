"""Scheduler invariants over random traffic (hypothesis), and agreement with the per-step reference loop."""

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from core import GENERATING, IDLE, PADDING, TrafficConfig, generate, simulate
from core.chapter.reference import simulate_per_step

from .helpers import requests_strategy

policies = st.sampled_from(["static", "continuous"])
slot_counts = st.integers(1, 6)
timeouts = st.integers(0, 8)


@settings(max_examples=150, deadline=None)
@given(requests_strategy, slot_counts, policies, timeouts)
def test_matches_the_per_step_reference(reqs, slots, policy, timeout):
    """The event-driven scheduler gives exactly the per-step loop's schedule."""
    fast, slow = simulate(reqs, slots, policy, timeout), simulate_per_step(reqs, slots, policy, timeout)
    for field in ("start", "finish", "slot", "release"):
        assert getattr(fast, field).tolist() == getattr(slow, field).tolist(), field


@settings(max_examples=150, deadline=None)
@given(requests_strategy, slot_counts, policies, timeouts)
def test_tokens_conserved_and_nobody_early(reqs, slots, policy, timeout):
    """Every request generates exactly its tokens, never before arriving, in one slot."""
    run = simulate(reqs, slots, policy, timeout)
    generated = (run.timeline == GENERATING).sum()
    assert generated == sum(r.output_tokens for r in reqs)
    for i, r in enumerate(reqs):
        assert run.start[i] >= r.arrival
        assert run.finish[i] - run.start[i] == r.output_tokens
        assert 0 <= run.slot[i] < slots
        assert (run.timeline[run.slot[i], run.start[i] : run.finish[i]] == GENERATING).all()


@settings(max_examples=150, deadline=None)
@given(requests_strategy, slot_counts, policies, timeouts)
def test_no_slot_holds_two_requests(reqs, slots, policy, timeout):
    """Occupancy intervals [start, release) on one slot never overlap."""
    run = simulate(reqs, slots, policy, timeout)
    for s in range(slots):
        spans = sorted((run.start[i], run.release[i]) for i in range(len(reqs)) if run.slot[i] == s)
        for (_, end), (begin, _) in zip(spans, spans[1:]):
            assert end <= begin


@settings(max_examples=150, deadline=None)
@given(requests_strategy, slot_counts)
def test_continuous_is_fcfs_and_work_conserving(reqs, slots):
    """Continuous: starts follow arrival order, no padding, and no idle slot while someone waits."""
    run = simulate(reqs, slots, "continuous")
    order = sorted(range(len(reqs)), key=lambda i: (reqs[i].arrival, i))
    starts = [run.start[i] for i in order]
    assert starts == sorted(starts)
    assert not (run.timeline == PADDING).any()
    for t in range(run.drain):
        waiting = sum(1 for i, r in enumerate(reqs) if r.arrival <= t < run.start[i])
        if waiting:
            assert not (run.timeline[:, t] == IDLE).any()


@settings(max_examples=150, deadline=None)
@given(requests_strategy, slot_counts, timeouts)
def test_static_pads_only_inside_a_batch(reqs, slots, timeout):
    """Static: members of one batch start together and release together at the longest member's finish."""
    run = simulate(reqs, slots, "static", timeout)
    for t in set(run.start.tolist()):
        members = np.flatnonzero(run.start == t)
        assert len(members) <= slots
        assert sorted(run.slot[members].tolist()) == list(range(len(members)))
        assert (run.release[members] == run.finish[members].max()).all()
    padding_cells = (run.timeline == PADDING).sum()
    assert padding_cells == int((run.release - run.finish).sum())


@settings(max_examples=100, deadline=None)
@given(requests_strategy, timeouts)
def test_one_slot_gives_identical_schedules(reqs, timeout):
    """With one slot static and continuous are the same schedule, whatever the timeout: one arrival fills the batch."""
    a, b = simulate(reqs, 1, "static", timeout), simulate(reqs, 1, "continuous")
    assert a.start.tolist() == b.start.tolist()
    assert np.array_equal(a.timeline, b.timeline)


@settings(max_examples=25, deadline=None)
@given(
    st.integers(0, 2**32 - 1), st.sampled_from(["heavy", "uniform", "fixed"]), st.sampled_from(["window", "poisson"])
)
def test_same_seed_same_run(seed, lengths, arrivals):
    """The same seed gives the same requests and the same run, byte for byte."""
    config = TrafficConfig(seed=seed, requests=40, lengths=lengths, arrivals=arrivals, rate=0.7)
    a, b = simulate(generate(config), 4, "static"), simulate(generate(config), 4, "static")
    assert a.requests == b.requests
    assert a.timeline.tobytes() == b.timeline.tobytes()
