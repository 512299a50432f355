"""What the one loop decided: a `Schedule` (per request and per pass, on its clock) and its memory `Event`s."""

from __future__ import annotations

from dataclasses import dataclass, field
from functools import cached_property
from typing import NamedTuple

import numpy as np

from core.kv.memory import MemoryConfig
from core.sched.policies import Policy, carry_policy
from core.workload.request import Request


class Event(NamedTuple):
    """A memory decision at a boundary: a request preempted (with its tokens to recompute) or a head blocked.

    A named tuple, not a frozen dataclass: a tight pool makes tens of thousands, and a tuple is made in a third of
    the time.
    """

    step: int  # pass index
    kind: str  # "preempt" | "blocked"
    request: int  # index into the requests as given
    slot: int  # the slot it left (preempt) or the lowest free slot it could not take (blocked)
    tokens: int  # preempt: generated tokens to recompute; blocked: blocks it needed
    free: int  # free blocks at the decision
    needed_by: int = -1  # preempt: the request whose next block could not be found


@dataclass(frozen=True, eq=False)
class Schedule:
    """What the engine decided, in pass indices, and each pass's start and end on its clock.

    Per request (in the order given): the final slot, the first admission, the pass of the first token, the
    exclusive last pass and the release. `cells` lists every drawn interval: request, slot, first pass, end pass,
    state. Per pass: its clock, its work, and the blocks in use.
    """

    requests: tuple[Request, ...]
    slots: int
    policy: str  # its name (given the object, the name; the object is `rules`)
    memory: MemoryConfig
    batch_timeout: float
    token_budget: int | None
    cost: str
    slot: np.ndarray
    start_pass: np.ndarray
    first_pass: np.ndarray
    finish_pass: np.ndarray
    release_pass: np.ndarray
    cells: np.ndarray  # (k, 5) int64
    pass_start: np.ndarray
    pass_end: np.ndarray
    pass_rows: np.ndarray
    pass_prefill: np.ndarray
    pass_context: np.ndarray
    pass_blocks: np.ndarray  # blocks held (reserved, under contiguous) during each pass
    pass_largest_free: np.ndarray  # the longest run of free blocks during each pass
    pass_token_blocks: np.ndarray  # blocks that hold tokens (what a paged cache would need) during each pass
    events: tuple[Event, ...] = field(default=())
    recomputed_tokens: int = 0
    pool_maps: tuple[tuple[int, ...], ...] | None = None  # with record_pool: each block's owner during each pass
    rules: Policy | None = field(default=None, repr=False)  # the policy object that made it (set from `policy`)

    def __post_init__(self):
        carry_policy(self)

    @property
    def passes(self) -> int:
        """Return the number of forward passes."""
        return len(self.pass_start)

    @property
    def preemptions(self) -> int:
        """Return how many times a running request was thrown out for memory."""
        return sum(1 for e in self.events if e.kind == "preempt")

    @cached_property
    def drain(self) -> float:
        """Return when the last request finishes, on the schedule's clock."""
        return float(self.pass_end[self.finish_pass - 1].max()) if len(self.requests) else 0.0

    def blocks_by_step(self) -> np.ndarray:
        """Return the blocks held (reserved, under contiguous or static) at each step 0..drain-1 (step clock)."""
        if self.cost != "unit":
            raise ValueError("blocks_by_step needs a step-clock schedule (cost None)")
        out = np.zeros(int(self.drain), dtype=np.int64)
        out[self.pass_start.astype(np.int64)] = self.pass_blocks  # one pass per step while anything runs
        return out

    def memory_metrics(self) -> dict:
        """Return preemptions, recomputed tokens, peak blocks, KV use and (contiguous) fragmentation."""
        out = {
            "preemptions": self.preemptions,
            "recomputed_tokens": self.recomputed_tokens,
            "peak_blocks": int(self.pass_blocks.max()) if self.passes else 0,
        }
        pool, drain = self.memory.kv_blocks, self.drain
        if pool is not None:
            weight = self.pass_end - self.pass_start  # a pass counts for as long as it lasts; idle gaps hold nothing
            out["kv_utilisation"] = float((self.pass_token_blocks * weight).sum() / (pool * drain)) if drain else 0.0
            if self.memory.allocation == "contiguous":
                free = pool - self.pass_blocks
                outside = np.where(free > 0, (free - self.pass_largest_free) / np.maximum(free, 1), 0.0)
                out["fragmentation"] = float((outside * weight).sum() / drain) if drain else 0.0
        return out
