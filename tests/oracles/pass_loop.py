"""The timed clock's oracle: every pass costed one at a time, for simulate_timed (core/sched/timed.py)."""

from __future__ import annotations

from collections import deque
from collections.abc import Sequence

import numpy as np

from core.batch.step_batch import prompt_length
from core.chapter.reference import _admits_between_passes
from core.clock.cost import StepCost, prices_rectangles, wake_of
from core.sched.timed import TimedRun
from core.workload.request import Request


def simulate_per_pass(
    requests: Sequence[Request], slots: int, policy: str, cost: StepCost, batch_timeout_ms: float = 0.0
):
    """Return the same TimedRun as `simulate_timed`, one pass at a time over every slot (the oracle for timed runs).

    Each iteration either runs a pass at the clock, costed by what its slots hold, or, when nothing can run, moves
    the clock to the next event: an arrival, or the moment the oldest waiting request has waited the timeout.
    """
    continuous = _admits_between_passes(policy)
    requests = tuple(requests)
    n = len(requests)
    order = sorted(range(n), key=lambda i: (requests[i].arrival, i))
    prompt = [prompt_length(r.prompt_tokens) for r in requests]
    start, finish, slot_of, release = ([-1] * n for _ in range(4))
    occupant: list[int | None] = [None] * slots
    remaining = [r.output_tokens for r in requests]
    waiting: deque[int] = deque()
    arrived, done, p, clock, last_end = 0, 0, 0, 0.0, 0.0
    starts, ends, rows_l, prefill_l, context_l = [], [], [], [], []
    while done < n:
        while arrived < n and requests[order[arrived]].arrival <= clock:
            waiting.append(order[arrived])
            arrived += 1
        batch_over = all(o is None or remaining[o] == 0 for o in occupant)
        for s, o in enumerate(occupant):  # retire
            if o is not None and remaining[o] == 0 and (continuous or batch_over):
                release[o], occupant[s] = p, None
        if continuous or all(o is None for o in occupant):
            can_form = (
                continuous
                or len(waiting) >= slots
                # Compared as the jump below computes it: (arrival + timeout) - arrival can round below the timeout.
                or (waiting and clock >= requests[waiting[0]].arrival + batch_timeout_ms)
                or (waiting and arrived == n)
            )
            for s in range(slots):  # admit, lowest slot first
                if can_form and occupant[s] is None and waiting:
                    i = waiting.popleft()
                    occupant[s], start[i], slot_of[i] = i, p, s
        held = [o for o in occupant if o is not None]
        if not held:  # nothing can run: jump to the next arrival, or to when the oldest has waited the timeout
            events = [requests[order[arrived]].arrival] if arrived < n else []
            if waiting:
                events.append(requests[waiting[0]].arrival + batch_timeout_ms)
            clock = float(max(clock, min(events)))
            continue
        if not continuous:
            width = max(prompt[o] for o in held)
            first = all(start[o] == p for o in held)
            rows, prefill = (0, len(held) * width) if first else (len(held), 0)
            context = 0 if first else sum(width + p - start[o] for o in held)
        else:
            rows = sum(1 for o in held if start[o] != p)
            prefill = sum(prompt[o] for o in held if start[o] == p)
            context = sum(prompt[o] + p - start[o] for o in held if start[o] != p)
        starts.append(clock)
        # A profile timed as rectangles prices a static prompt pass by the rows it holds (recorded as 0 decoding).
        priced = len(held) if not continuous and first and prices_rectangles(cost) else rows
        wake = wake_of(cost)(clock - last_end) if wake_of(cost) is not None and clock > last_end else None
        price = float(cost.pass_ms(priced, prefill, context))
        clock += price if wake is None else price + wake  # the pass after an idle gap pays the profile's wake
        ends.append(last_end := clock)
        rows_l.append(rows)
        prefill_l.append(prefill)
        context_l.append(context)
        for o in held:  # one forward pass
            if remaining[o] > 0:
                remaining[o] -= 1
                if remaining[o] == 0:
                    finish[o], done = p + 1, done + 1
        p += 1
    for o in occupant:  # the last batch's members release at the end of its last pass
        if o is not None:
            release[o] = finish[o] if continuous else p
    as_array = lambda xs, kind=np.int64: np.array(xs, dtype=kind)  # noqa: E731
    return TimedRun(
        requests,
        slots,
        policy,
        float(batch_timeout_ms),
        cost.name,
        *map(as_array, (slot_of, start, finish, release)),
        as_array(starts, float),
        as_array(ends, float),
        *map(as_array, (rows_l, prefill_l, context_l)),
    )
