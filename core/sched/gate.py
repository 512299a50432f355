"""What a gated policy's gate is told at a boundary: how many waiting requests the pass would admit.

TGI's router decides whether the waiting join the running batch from how many would fit; the loop asks this before
`admits_now`, on a copy of a contiguous pool, so the admission that follows (or not) finds the pool as it was.
"""

from __future__ import annotations

import copy


def gate_fitting(loop, free_slots: int) -> int:
    """Return how many waiting requests, from the head, a pass would admit: slots, prompt tokens, the pool.

    For a gated policy, which reserves every request's whole life (checked at registration); the pool is asked
    on a copy, so the admission that follows (or not) finds it as it was.
    """
    P, pool, pcap, e = loop.P, loop.pool, loop.pcap, loop.engine
    trial = copy.deepcopy(pool) if loop.limited and pool.contiguous else None
    free_blocks = pool.free if loop.limited else 0
    fitting = prompts = 0
    for k in loop.waiting:
        if fitting == free_slots or (pcap and fitting and prompts + P[k] > pcap):
            break
        tokens = P[k] + loop.RES[k]
        if trial is not None:
            if not trial.can_allocate(k, tokens):
                break
            trial.allocate(k, tokens)
        elif loop.limited:
            need = e.memory.blocks_for(tokens)
            if need > free_blocks:
                break
            free_blocks -= need
        fitting += 1
        prompts += P[k]
    return fitting
