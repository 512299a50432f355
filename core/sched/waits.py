"""Waits for memory: the steps a request waited for KV blocks while a slot stood empty, read off a recorded pool."""

from __future__ import annotations

import heapq
from bisect import bisect_left
from dataclasses import dataclass

from core.kv.memory import longest_free_run
from core.states import IDLE


@dataclass(frozen=True)
class Wait:
    """A step at which a request waited for memory while a slot stood empty, and what the pool had."""

    step: int  # on the step clock
    slot: int  # the lowest empty slot
    request: int  # the request waiting (the queue's head under continuous batching)
    needed: int  # blocks it needed (continuous) or one more row of the rectangle (static)
    free: int  # free blocks
    longest_run: int  # the longest run of consecutive free blocks

    @property
    def hole(self) -> bool:
        """Return whether enough blocks were free, only not in one run (contiguous's holes)."""
        return self.free >= self.needed > self.longest_run


def memory_waits(s, run) -> list[Wait]:
    """Return every step a request waited for memory with a slot empty: schedule `s` (recorded pool) and its run.

    Continuous: from a head's first blocked boundary until it starts, each step with an empty slot. Batch policies:
    each step of a batch cut short by its rectangle (fewer rows than slots while others waited), per empty slot.
    """
    at = {int(start): p for p, start in enumerate(s.pass_start.tolist())}
    seen: dict[int, tuple[int, int]] = {}

    def pool_at(t: int) -> tuple[int, int]:  # free blocks and the longest free run, once per map (a stretch shares one)
        owners = s.pool_maps[at[t]]
        key = id(owners)  # the maps are alive in s.pool_maps, so an id names one map
        if key not in seen:
            seen[key] = (sum(1 for o in owners if o < 0), longest_free_run(owners))
        return seen[key]

    if s.rules.forms_batches:
        return _static_waits(s, run, pool_at)
    idle = run.grid(run.drain) == IDLE
    lowest_idle = idle.argmax(axis=0).tolist()  # the lowest empty slot at each step (where there is one)
    any_idle = idle.any(axis=0).tolist()
    starts: dict[int, list[int]] = {}  # request -> the steps its cells begin, in order
    for i, _, lo, _, _ in run.cells.tolist() if run.cells is not None else []:
        starts.setdefault(i, []).append(lo)
    for begun in starts.values():
        begun.sort()
    latest: dict[int, Wait] = {}  # one request per step: a later head (after a preemption put another in front) wins
    blocked = sorted((int(s.pass_start[e.step]), e.request, e.tokens) for e in s.events if e.kind == "blocked")
    for t0, request, needed in blocked:
        begun = starts.get(request, [])
        k = bisect_left(begun, t0)
        t1 = begun[k] if k < len(begun) else run.drain  # it waits until its next cell begins
        for t in range(t0, t1):
            if any_idle[t] and t in at:
                latest[t] = Wait(t, lowest_idle[t], request, needed, *pool_at(t))
    return [latest[t] for t in sorted(latest)]


def _static_waits(s, run, pool_at) -> list[Wait]:
    """Static: each step of a batch that formed with fewer rows than slots while requests waited, per empty slot."""
    n = len(s.requests)
    start, arrival, release = run.start.tolist(), run.arrival.tolist(), run.release.tolist()
    prompt = [max(1, r.prompt_tokens) for r in s.requests]
    reserve = s.memory.reserve_tokens or max((r.output_tokens for r in s.requests), default=1)
    batches: dict[int, list[int]] = {}  # batch start -> its members, in request order
    for i in range(n):
        batches.setdefault(start[i], []).append(i)
    by_arrival = sorted(range(n), key=arrival.__getitem__)
    waiting: list[int] = []  # a heap of request indices that have arrived, some since started (dropped lazily)
    nxt, out = 0, []
    for t0 in sorted(batches):
        while nxt < n and arrival[by_arrival[nxt]] <= t0:
            heapq.heappush(waiting, by_arrival[nxt])
            nxt += 1
        while waiting and start[waiting[0]] <= t0:  # started by t0: never waiting again
            heapq.heappop(waiting)
        members = batches[t0]
        if len(members) == s.slots or not waiting:
            continue
        head = waiting[0]  # the lowest-numbered request waiting at t0
        row = s.memory.blocks_for(max(prompt[i] for i in members + [head]) + reserve)
        for t in range(t0, max(release[i] for i in members)):
            free, longest = pool_at(t)
            for slot in range(len(members), s.slots):
                out.append(Wait(t, slot, head, row, free, longest))
    return out
