"""Shared builders for the tests: small request lists and hypothesis strategies."""

import numpy as np
from hypothesis import strategies as st

from core import Request
from core.workload.request import request_label


def make_requests(*pairs: tuple[int, int]) -> list[Request]:
    """Return requests A, B, … from (arrival, output_tokens) pairs."""
    return [Request(request_label(i), a, n) for i, (a, n) in enumerate(pairs)]


requests_strategy = st.lists(st.tuples(st.integers(0, 30), st.integers(1, 25)), min_size=0, max_size=40).map(
    lambda pairs: make_requests(*pairs)
)


def check_timed_invariants(run) -> None:
    """Assert: no start before arrival, no overlapping passes, tokens conserved, no slot idle while one waits."""
    assert np.all(run.start_ms >= run.arrival_ms)
    assert np.all(run.pass_end_ms > run.pass_start_ms)
    assert np.all(run.pass_start_ms[1:] >= run.pass_end_ms[:-1])
    assert int((run.finish_pass - run.start_pass).sum()) == sum(r.output_tokens for r in run.requests)
    if run.policy == "continuous":
        for p in range(run.passes):
            running = int(((run.start_pass <= p) & (p < run.finish_pass)).sum())
            waiting = (run.arrival_ms <= run.pass_start_ms[p]) & (run.start_pass > p)
            assert running == run.slots or not waiting.any()
