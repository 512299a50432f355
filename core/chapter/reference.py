"""The chapter's straightforward per-step simulator: visits every slot at every step; the loop the page shows."""

from __future__ import annotations

from collections import deque
from collections.abc import Sequence

import numpy as np

from core.sched.policies import Policy, get_policy
from core.sched.run import Run
from core.workload.request import Request


def _admits_between_passes(policy: str | Policy) -> bool:
    """Return whether the policy admits between passes; refuse one whose rules the chapter's loops do not follow."""
    pol = get_policy(policy)
    if pol.has_token_budget or pol.ordered:
        raise ValueError(
            f"the chapter's loop follows first come, first served without a token budget, not {pol.name}; "
            "simulate_memory_per_step follows every policy"
        )
    return not pol.forms_batches


def simulate_per_step(requests: Sequence[Request], slots: int, policy: str, batch_timeout: int = 0) -> Run:
    """Return the same Run as `simulate`, computed one step at a time (slow; for tests and benchmarks)."""
    continuous = _admits_between_passes(policy)  # static batching is the same loop with admission closed
    requests = tuple(requests)
    n = len(requests)
    order = sorted(range(n), key=lambda i: (requests[i].arrival, i))
    start, finish, slot_of, release = ([-1] * n for _ in range(4))
    occupant: list[int | None] = [None] * slots  # request index holding each slot
    remaining = [r.output_tokens for r in requests]
    waiting: deque[int] = deque()
    arrived, done, t = 0, 0, 0
    while done < n:
        while arrived < n and requests[order[arrived]].arrival <= t:
            waiting.append(order[arrived])
            arrived += 1
        batch_over = all(o is None or remaining[o] == 0 for o in occupant)
        for s, o in enumerate(occupant):  # retire
            if o is not None and remaining[o] == 0 and (continuous or batch_over):
                release[o], occupant[s] = t, None
        if continuous or all(o is None for o in occupant):
            can_form = (
                continuous
                or len(waiting) >= slots
                or (waiting and t - requests[waiting[0]].arrival >= batch_timeout)
                or (waiting and arrived == n)
            )
            for s in range(slots):  # admit, lowest slot first
                if can_form and occupant[s] is None and waiting:
                    i = waiting.popleft()
                    occupant[s], start[i], slot_of[i] = i, t, s
        for o in occupant:  # one forward pass
            if o is not None and remaining[o] > 0:
                remaining[o] -= 1
                if remaining[o] == 0:
                    finish[o], done = t + 1, done + 1
        t += 1
    drain = max(finish, default=0)
    for o in occupant:  # the last batch's members release at the drain
        if o is not None:
            release[o] = finish[o] if continuous else drain
    as_array = lambda xs: np.array(xs, dtype=np.int64)  # noqa: E731
    return Run(requests, slots, policy, batch_timeout, *map(as_array, (start, finish, slot_of, release)))
