"""The two unlimited-pool loops kept beside the engine for speed: continuous and static batching over heaps.

Each is the method of exactly one policy object (`sched.policies`), never inherited: a policy that changes a rule runs
in the engine. On an unlimited pool they give the engine's schedules bit for bit, about 3x faster (tested;
`./dev bench memory`). Requests are numbered first come, first served (by arrival, then trace order).
"""

from __future__ import annotations

import heapq
from array import array
from bisect import bisect_right

import numpy as np


def fast_loop_for(policy, memory, token_budget: int | None, timed: bool = False):
    """Return the policy's own fast loop for a run, or None where the engine runs it: the one place that decides.

    A fast loop hard-codes its policy's rules on an unlimited pool without a token budget, where it gives the
    engine's schedules bit for bit (tested); `timed` asks for the loop on a clock (`fast_timed`), else on steps.
    Asked by `simulate`, `simulate_timed` and `schedule_timed` (a pass runner: the online replay); where it says
    None the engine runs, whose `_Engine.run` then runs static's batches or the continuous loop's phases.
    """
    loop = policy.fast_timed if timed else policy.fast_steps
    if loop is None or token_budget is not None or (memory is not None and not memory.unlimited):
        return None
    return loop


def continuous_steps(arrivals: list[int], lengths: list[int], slots: int) -> tuple[list[int], list[int]]:
    """Return each request's start and slot: admitted at the first step a slot is free, into the lowest free slot."""
    start, slot_of = [0] * len(arrivals), [0] * len(arrivals)
    free = list(range(slots))  # a heap: the lowest free slot index is free[0]
    running: list[tuple[int, int]] = []  # heap of (finish, slot)
    t = 0
    for k, (a, length) in enumerate(zip(arrivals, lengths)):
        t = max(t, a)
        if not free and running[0][0] > t:
            t = running[0][0]  # nothing frees up before the earliest finish
        while running and running[0][0] <= t:
            heapq.heappush(free, heapq.heappop(running)[1])
        slot = heapq.heappop(free)
        start[k], slot_of[k] = t, slot
        heapq.heappush(running, (t + length, slot))
    return start, slot_of


def static_steps(arrivals: list[int], lengths: list[int], slots: int, timeout: int, forms_at):
    """Return each request's start, slot and release: batches formed when `forms_at` says, run to their longest."""
    n = len(arrivals)
    start, slot_of, release = [0] * n, [0] * n, [0] * n
    t, k = 0, 0
    while k < n:
        formed = int(forms_at(arrivals, k, slots, timeout, t))
        size = min(slots, bisect_right(arrivals, formed, lo=k) - k)
        end = formed + max(lengths[k : k + size])
        for j in range(size):
            start[k + j], slot_of[k + j], release[k + j] = formed, j, end
        t, k = end, k + size
    return start, slot_of, release


def continuous_timed(requests, order, slots, runner):
    """Admit into the lowest free slot at the first pass that starts at or after the arrival; `runner` runs passes."""
    simulated = getattr(runner, "simulated", False)  # its hooks do nothing: skip the calls, once per pass and request
    step, run_pass = runner.step if simulated else None, runner.run_pass
    admit, retire = runner.on_admit, runner.on_retire
    wake = runner.wake if simulated else None  # a simulated pass after an idle gap costs the profile's wake
    n = len(requests)
    arrival = [requests[i].arrival for i in order]
    prompt = [max(1, r.prompt_tokens) for r in requests]  # prompt_length, inlined: it runs once per request
    slot_of, start, finish = [0] * n, [0] * n, [0] * n
    passes = array("d")  # (start ms, end ms, decoding rows, prefill tokens, context tokens), five per pass
    record = passes.extend
    free = list(range(slots))
    running: list[tuple[int, int, int]] = []  # heap of (finish pass, slot, request)
    k, p, clock, last_end = 0, 0, 0.0, 0.0
    base = 0  # sum over running of (prompt - start pass): their context at pass p is base + count * p - prefill
    while k < n or running:
        while running and running[0][0] == p:  # retire
            _, s, i = heapq.heappop(running)
            heapq.heappush(free, s)
            base -= prompt[i] - start[i]
            if not simulated:
                retire(i)
        if not running and k < n and arrival[k] > clock:
            clock = float(arrival[k]) if simulated else runner.wait(float(arrival[k]))  # nothing runs till then
        new_prompt = new_count = 0
        while free and k < n and arrival[k] <= clock:  # admit
            i, s = order[k], heapq.heappop(free)
            k += 1
            slot_of[i], start[i], finish[i] = s, p, p + requests[i].output_tokens
            heapq.heappush(running, (finish[i], s, i))
            if not simulated:
                admit(i, s)
            new_prompt += prompt[i]
            new_count += 1
            base += prompt[i] - p
        if not running:
            break  # the last request has finished
        decoding = len(running) - new_count
        context = base + len(running) * p - new_prompt
        began = clock
        if not simulated:
            clock = run_pass(decoding, new_prompt, context, clock)
        elif wake is None or clock <= last_end:
            clock = clock + step(decoding, new_prompt, context)
        else:  # the engine idled since the last pass ended (or since 0): the pass after pays the wake
            clock = clock + (step(decoding, new_prompt, context) + wake(clock - last_end))
        record((began, clock, decoding, new_prompt, context))
        last_end = clock
        p += 1
    table = np.frombuffer(passes, dtype=float).reshape(-1, 5)  # no per-pass Python objects to convert
    as_int = lambda column: table[:, column].astype(np.int64)  # noqa: E731 - exact: counts far below 2**53
    return slot_of, start, finish, finish, table[:, 0], table[:, 1], as_int(2), as_int(3), as_int(4)


def static_timed(requests, order, slots, runner, timeout, forms_at):
    """Form a batch when `forms_at` says (on the runner's clock); run its padded rectangle as one call."""
    n = len(requests)
    arrival = [requests[i].arrival for i in order]
    slot_of, start, finish, release = [0] * n, [0] * n, [0] * n, [0] * n
    starts, ends, rows_l, prefill_l, context_l = [], [], [], [], []
    k, p, clock = 0, 0, 0.0
    while k < n:
        ready = forms_at(arrival, k, slots, timeout, clock)
        clock = runner.wait(ready) if ready > clock else clock
        size = 0
        while size < slots and k + size < n and arrival[k + size] <= clock:
            size += 1
        members = order[k : k + size]
        width = max(max(1, requests[i].prompt_tokens) for i in members)
        length = max(requests[i].output_tokens for i in members)
        for j, i in enumerate(members):
            slot_of[i], start[i], finish[i], release[i] = j, p, p + requests[i].output_tokens, p + length
        # The padded rectangle, every member a row until the longest finishes. No decision depends on the clock
        # inside a batch, so its passes are run (or costed) as one.
        age = np.arange(length, dtype=np.int64)
        rows = np.where(age == 0, 0, size)
        prefill = np.where(age == 0, size * width, 0)
        context = np.where(age == 0, 0, size * (width + age))
        done = runner.run_batch(members, rows, prefill, context, clock)
        begun = np.empty(length)
        begun[0], begun[1:] = clock, done[:-1]
        starts.append(begun)
        ends.append(done)
        rows_l.append(rows)
        prefill_l.append(prefill)
        context_l.append(context)
        clock = float(done[-1])
        p += length
        k += size
    join = lambda parts, kind: np.concatenate(parts) if parts else np.zeros(0, kind)  # noqa: E731
    return (
        slot_of,
        start,
        finish,
        release,
        join(starts, float),
        join(ends, float),
        join(rows_l, np.int64),
        join(prefill_l, np.int64),
        join(context_l, np.int64),
    )
