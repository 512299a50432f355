"""Static and continuous batching, event-driven: the scheduler jumps from one admission or retirement to the next."""

from __future__ import annotations

import heapq
from bisect import bisect_right
from collections.abc import Sequence

import numpy as np

from .engine import as_run, schedule
from .limits import MAX_DRAIN_STEPS, MAX_SLOTS, check_workload
from .memory import UNLIMITED, MemoryConfig
from .policies import get_policy
from .request import Request
from .run import Run


def simulate(
    requests: Sequence[Request],
    slots: int,
    policy: str,
    batch_timeout: int = 0,
    memory: MemoryConfig = UNLIMITED,
    token_budget: int | None = None,
) -> Run:
    """Return the schedule of `requests` on `slots` slots under a registered policy and a KV pool (step clock).

    Unlimited memory under static or continuous batching takes the event-driven fast path below; everything else
    runs in `core.engine`, which gives the same schedules as this path where both apply (tested).
    """
    get_policy(policy)
    if not memory.unlimited or policy == "chunked" or token_budget is not None:
        return as_run(schedule(requests, slots, policy, memory, None, batch_timeout, token_budget))
    _validate(slots, policy, batch_timeout)
    requests = tuple(requests)
    check_workload(len(requests), sum(r.output_tokens for r in requests))
    arrivals = np.array([r.arrival for r in requests], dtype=np.int64)
    lengths = np.array([r.output_tokens for r in requests], dtype=np.int64)
    # First come, first served: by arrival, then trace order (a stable sort keeps trace order on ties).
    order = np.argsort(arrivals, kind="stable")
    arr, lens = arrivals[order].tolist(), lengths[order].tolist()
    if policy == "continuous":
        start_s, slot_s = _continuous(arr, lens, slots)
        release_s = None
    else:
        start_s, slot_s, release_s = _static(arr, lens, slots, batch_timeout)
    start, slot = np.empty_like(arrivals), np.empty_like(arrivals)
    start[order], slot[order] = start_s, slot_s
    finish = start + lengths
    release = finish.copy()
    if release_s is not None:
        release[order] = release_s
    return Run(requests, slots, policy, batch_timeout, start, finish, slot, release)


def _validate(slots: int, policy: str, batch_timeout: int) -> None:
    if not isinstance(slots, (int, np.integer)) or not 1 <= slots <= MAX_SLOTS:
        raise ValueError(f"slots must be an integer in 1..{MAX_SLOTS}, got {slots!r}")
    if not isinstance(batch_timeout, (int, np.integer)) or not 0 <= batch_timeout <= MAX_DRAIN_STEPS:
        raise ValueError(f"batch_timeout must be an integer in 0..{MAX_DRAIN_STEPS:,}, got {batch_timeout!r}")


def _continuous(arrivals: list[int], lengths: list[int], slots: int) -> tuple[list[int], list[int]]:
    """Admit each request (in FCFS order) at the first step a slot is free, into the lowest free slot."""
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


def _static(
    arrivals: list[int], lengths: list[int], slots: int, timeout: int
) -> tuple[list[int], list[int], list[int]]:
    """Form batches when the slots can be filled, the oldest waited `timeout`, or nobody else will arrive."""
    n = len(arrivals)
    start, slot_of, release = [0] * n, [0] * n, [0] * n
    t, k = 0, 0
    while k < n:
        oldest = arrivals[k]
        full_at = arrivals[k + slots - 1] if k + slots - 1 < n else float("inf")
        formed = int(max(t, oldest, min(full_at, oldest + timeout, arrivals[-1])))
        size = min(slots, bisect_right(arrivals, formed, lo=k) - k)
        end = formed + max(lengths[k : k + size])
        for j in range(size):
            start[k + j], slot_of[k + j], release[k + j] = formed, j, end
        t, k = end, k + size
    return start, slot_of, release
