"""What a pool must hold before anything runs: each request's peak, the least pool, and the refusal of one too small."""

from __future__ import annotations

from collections.abc import Sequence
from operator import attrgetter

from core.kv.memory import MemoryConfig
from core.limits import LimitError
from core.sched.policies import Policy, get_policy
from core.workload.request import Request


def _sizes(requests: Sequence[Request], memory: MemoryConfig, policy: str | Policy) -> tuple[bool, list[int]]:
    """Return whether requests reserve (contiguous, static rows) and the tokens each must hold at its peak."""
    pol = get_policy(policy)
    reserving = pol.reserves_whole_life(memory.allocation)
    if not reserving:  # the prompt and every token it generates
        return False, [(r.prompt_tokens or 1) + r.output_tokens for r in requests]
    extra = memory.reserve_tokens or max(map(attrgetter("output_tokens"), requests), default=1)
    # A reservation holds the request's own max_tokens where given (a static row: the traffic's cap, for all).
    if pol.forms_batches:
        return True, [(r.prompt_tokens or 1) + extra for r in requests]
    return True, [(r.prompt_tokens or 1) + (r.max_tokens or extra) for r in requests]


def smallest_pool(requests: Sequence[Request], memory: MemoryConfig, policy: str | Policy = "continuous") -> int:
    """Return the fewest blocks of `memory.block_size` in which every request fits under `policy` (at least 1)."""
    _, sizes = _sizes(requests, memory, policy)
    return max(memory.blocks_for(max(sizes)) if sizes else 1, 1)


def check_fits(requests: Sequence[Request], memory: MemoryConfig, policy: str | Policy = "continuous") -> None:
    """Refuse, before anything runs, a request that could never fit the pool, naming it and both sizes."""
    if memory.unlimited:
        return
    reserve = memory.reserve_tokens
    reserving, sizes = _sizes(requests, memory, policy)
    longest = max(map(attrgetter("output_tokens"), requests), default=1) if reserving and reserve is not None else 0
    if reserving and reserve is not None and reserve < longest:
        raise LimitError(
            f"reserve_tokens {reserve:,} is below the longest output in the traffic ({longest:,} tokens): a "
            "reservation (contiguous, a static row, no-evict) cannot grow; reserve at least that"
        )
    pool = memory.kv_blocks
    if not sizes or memory.blocks_for(max(sizes)) <= pool:  # the common case: one pass over the sizes, no loop
        return
    # Name the largest request (the first of them in trace order): its blocks are the least pool that works.
    k = max(range(len(sizes)), key=lambda i: (sizes[i], -i))
    r, tokens, need = requests[k], sizes[k], memory.blocks_for(sizes[k])
    what = "its reservation" if reserving else "its prompt and output"
    raise LimitError(
        f"request {r.id!r} needs {need:,} blocks of {memory.block_size} tokens for {what} ({tokens:,} tokens) "
        f"but the pool has {pool:,}: give --kv-blocks at least {need:,}, the largest request's"
    )


def check_prompt_cap(requests: Sequence[Request], policy: Policy) -> None:
    """Refuse a prompt longer than the most prompt tokens the policy admits in a pass (TGI refuses it too)."""
    if type(policy).prompt_tokens_cap is Policy.prompt_tokens_cap:  # the base class caps nothing
        return
    prompts = [r.prompt_tokens or 1 for r in requests]
    cap = policy.prompt_tokens_cap(prompts)
    if cap and prompts and max(prompts) > cap:
        raise LimitError(
            f"a prompt of {max(prompts):,} tokens is longer than {policy.name}'s {cap:,} tokens a pass "
            f"({policy.cap_name}): give {policy.cap_name} at least {max(prompts):,}"
        )
