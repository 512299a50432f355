"""`simulate`: the step clock's entry point; an unlimited pool takes the policy's own fast loop when it has one."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from core.kv.memory import UNLIMITED, MemoryConfig
from core.limits import MAX_DRAIN_STEPS, MAX_SLOTS, check_workload
from core.sched.engine import as_run, schedule
from core.sched.fast_loops import fast_loop_for
from core.sched.policies import Policy, get_policy
from core.sched.run import Run
from core.workload.request import Request


def simulate(
    requests: Sequence[Request],
    slots: int,
    policy: str | Policy,
    batch_timeout: int = 0,
    memory: MemoryConfig = UNLIMITED,
    token_budget: int | None = None,
) -> Run:
    """Return the schedule of `requests` on `slots` slots under a registered policy and a KV pool (step clock).

    A policy's own fast loop runs where `fast_loop_for` says (an unlimited pool, no budget); everything else
    runs in `core.sched.engine`, which gives the same schedules where both apply (tested).
    """
    pol = get_policy(policy)
    fast_steps = fast_loop_for(pol, memory, token_budget)
    if fast_steps is None:
        return as_run(schedule(requests, slots, pol, memory, None, batch_timeout, token_budget))
    _validate(slots, batch_timeout)
    requests = tuple(requests)
    check_workload(len(requests), sum(r.output_tokens for r in requests))
    arrivals = np.array([r.arrival for r in requests], dtype=np.int64)
    lengths = np.array([r.output_tokens for r in requests], dtype=np.int64)
    # First come, first served: by arrival, then trace order (a stable sort keeps trace order on ties).
    order = np.argsort(arrivals, kind="stable")
    arr, lens = arrivals[order].tolist(), lengths[order].tolist()
    start_s, slot_s, release_s = fast_steps(arr, lens, slots, batch_timeout)
    start, slot = np.empty_like(arrivals), np.empty_like(arrivals)
    start[order], slot[order] = start_s, slot_s
    finish = start + lengths
    release = finish.copy()
    if release_s is not None:
        release[order] = release_s
    return Run(requests, slots, pol, batch_timeout, start, finish, slot, release)


def _validate(slots: int, batch_timeout: int) -> None:
    if not isinstance(slots, (int, np.integer)) or not 1 <= slots <= MAX_SLOTS:
        raise ValueError(f"slots must be an integer in 1..{MAX_SLOTS}, got {slots!r}")
    if not isinstance(batch_timeout, (int, np.integer)) or not 0 <= batch_timeout <= MAX_DRAIN_STEPS:
        raise ValueError(f"batch_timeout must be an integer in 0..{MAX_DRAIN_STEPS:,}, got {batch_timeout!r}")
