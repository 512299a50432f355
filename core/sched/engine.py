"""One scheduler for every policy on either clock: it asks the KV block manager who fits, and jumps between events.

`schedule` validates a run and hands it to `_Engine`, which runs static's batches itself (`_static`) or the
continuous loop's named phases (core/sched/continuous.py: arrive, retire, grow_or_preempt, plan_pass, admit, then
run_prompt_pass or jump), records every stretch of passes on its clock (`stretch`), and assembles the Schedule
(core/sched/assemble.py). The semantics are docs/design.md's "Memory contract"; with unlimited memory the
schedules are the chapter's, bit for bit (tests/test_memory.py). Which loop runs a policy on an unlimited pool, this
one or the policy's own fast loop, is decided in one place: `fast_loop_for` (core/sched/fast_loops.py).
"""

from __future__ import annotations

from collections.abc import Sequence
from itertools import islice
from operator import attrgetter, le

import numpy as np

from core.clock.cost import StepCost, UnitCost, prices_rectangles, scalar_pass_ms, wake_of
from core.clock.hardware import DEFAULT_ACCELERATOR
from core.kv.memory import UNLIMITED, KVPool, MemoryConfig
from core.limits import MAX_DRAIN_STEPS, MAX_SLOTS, check_prefill_passes, check_workload
from core.sched.assemble import STRETCH_FIELDS, assemble
from core.sched.continuous import ContinuousLoop
from core.sched.fits import check_fits, check_prompt_cap
from core.sched.policies import Policy, get_policy
from core.sched.run import Run
from core.sched.schedule_record import Event, Schedule
from core.states import GENERATING, PADDING, RECOMPUTE
from core.workload.request import Request

MAX_RECORDED_BLOCKS = 1024


def _validate(slots, policy, batch_timeout, token_budget, memory):
    if not isinstance(slots, (int, np.integer)) or not 1 <= slots <= MAX_SLOTS:
        raise ValueError(f"slots must be an integer in 1..{MAX_SLOTS}, got {slots!r}")
    if not isinstance(memory, MemoryConfig):
        raise TypeError("memory must be a MemoryConfig")
    if not 0 <= batch_timeout <= MAX_DRAIN_STEPS:
        raise ValueError(f"batch_timeout must be a finite number >= 0, got {batch_timeout!r}")
    if batch_timeout and not policy.has_timeout:
        raise ValueError(f"batch_timeout applies to a policy with a timeout, not {policy.name}")
    if policy.has_token_budget:
        if type(token_budget) is not int or not slots <= token_budget <= 10_000_000:
            raise ValueError(
                f"the {policy.name} policy needs token_budget, an integer in {slots:,}..10,000,000 (at least the "
                f"slots, so every decoding row fits in a pass), got {token_budget!r}"
            )
    elif token_budget is not None:
        raise ValueError(f"token_budget applies to a policy with a token budget, not {policy.name}")


def schedule(
    requests: Sequence[Request],
    slots: int,
    policy: str | Policy = "continuous",
    memory: MemoryConfig = UNLIMITED,
    cost: StepCost | None = None,
    batch_timeout: float = 0.0,
    token_budget: int | None = None,
    record_pool: bool = False,
) -> Schedule:
    """Return the schedule of `requests` on `slots` slots under a registered policy, a KV pool and a clock.

    `cost` None (or UnitCost) is the step clock: every pass lasts 1 and arrivals are steps. `record_pool` keeps
    every block's owner at every pass, for the views of a small pool (at most MAX_RECORDED_BLOCKS).
    """
    if record_pool and (memory.unlimited or memory.kv_blocks > MAX_RECORDED_BLOCKS):
        raise ValueError(f"record_pool needs a limited pool of at most {MAX_RECORDED_BLOCKS} blocks")
    pol = get_policy(policy)
    requests = tuple(requests)
    token_budget = default_budget(pol, requests, slots, token_budget)
    _validate(slots, pol, batch_timeout, token_budget, memory)
    check_workload(len(requests), sum(map(attrgetter("output_tokens"), requests)))
    check_fits(requests, memory, pol)
    check_prompt_cap(requests, pol)
    if pol.has_token_budget:  # a chunk pass is recorded on its own: bound them before the loop, not after
        prompts = [r.prompt_tokens or 1 for r in requests]  # an empty prompt still takes a pass
        check_prefill_passes(prompts, token_budget, pol.prefill_chunk_cap, slots)
    return _Engine(requests, slots, pol, memory, cost, float(batch_timeout), token_budget, record_pool).run()




def entry_budget(pol: Policy, requests: Sequence[Request], slots: int, asked: int | None, accelerator: str):
    """Return the tokens a pass `pol` runs at (None: no budget): its own setting, else `asked`, else its default.

    At least the slots, so every decoding row fits in a pass. The one place a budget is resolved: the loop, the
    lineup and the command line all ask it.
    """
    budget = pol.pass_budget(asked, accelerator, [r.prompt_tokens or 1 for r in requests])
    return None if budget is None else max(budget, min(slots, MAX_SLOTS))


def default_budget(pol: Policy, requests: Sequence[Request], slots: int, token_budget: int | None) -> int | None:
    """Return `token_budget`, or where none is given an engine's own on the default accelerator (`entry_budget`).

    A policy without one keeps None, which `_validate` refuses.
    """
    if token_budget is not None or not pol.has_token_budget:
        return token_budget
    return entry_budget(pol, requests, slots, None, DEFAULT_ACCELERATOR)


class _Engine:
    """The loop's state; one instance per schedule."""

    def __init__(self, requests, slots, pol, memory, cost, timeout, budget, record_pool=False):
        self.requests, self.slots, self.pol, self.memory = requests, slots, pol, memory
        self.cost, self.timeout, self.budget = cost, timeout, budget
        self.unit = cost is None or isinstance(cost, UnitCost)
        self.rectangles = prices_rectangles(cost)
        if not self.unit:
            self.step_ms = scalar_pass_ms(cost)
        self.wake = None if self.unit else wake_of(cost)
        self.last_end = 0.0  # where the previous pass ended: a pass that starts later follows an idle gap
        n = len(requests)
        arrivals = [r.arrival for r in requests]
        # FCFS; a stable sort keeps trace order on ties. Traffic usually comes in that order already (generated
        # traffic, most traces): then the order is the identity, found in one pass.
        self.in_order = all(map(le, arrivals, islice(arrivals, 1, None)))
        if self.in_order:
            self.order, queue, self.A = list(range(n)), list(requests), arrivals
        else:
            self.order = sorted(range(n), key=arrivals.__getitem__)
            queue = [requests[i] for i in self.order]
            self.A = [arrivals[i] for i in self.order]
        self.queue = queue
        self.P = [r.prompt_tokens or 1 for r in queue]  # prompt_length: an empty prompt still takes a pass
        self.OUT = [r.output_tokens for r in queue]
        reserve = self.reserve = memory.reserve_tokens or max(self.OUT, default=1)
        # What a reservation holds beyond the prompt: the request's own max_tokens where the client gave one (as
        # TGI's and TensorRT-LLM's schedulers read it), else the traffic's cap; a static row keeps the traffic's.
        self.RES = [r.max_tokens or reserve for r in queue]
        self.record_pool = record_pool
        self.pool = KVPool(memory, track_blocks=record_pool)  # block ids only where the views draw the map
        self.limited = not memory.unlimited  # an unlimited pool refuses nothing: the loop asks it nothing
        self.paged_growth = self.limited and not pol.reserves_whole_life(memory.allocation)
        # Without growth nobody is preempted: each request is then one generating cell from its first token to its
        # finish, after a prefill cell where a token budget spread its prompt over passes, which the assembly draws
        # itself. A policy that pauses the decoding rows for a prompt pass splits their cells too.
        self.plain = not (pol.forms_batches or self.paged_growth or pol.pauses_decoders)
        self.slot = [0] * n
        self.start = [-1] * n
        self.first = [-1] * n  # under a token budget only (chunks_done): elsewhere a prompt's first pass gives a token
        self.finish = [0] * n
        self.release = [0] * n  # static only: a continuous slot frees as its request finishes
        # Flat lists, turned into arrays once at the end: no per-cell or per-pass Python objects survive the loop.
        self.cells: list[int] = []  # (request, slot, first pass, end pass, state, tokens emitted at its start) each
        self.st: list[float] = []  # the stretches, STRETCH_FIELDS numbers each
        self.ends: dict[int, np.ndarray] = {}  # stretch index -> its passes' ends, where they were costed as an array
        self.events: list[Event] = []
        self.recomputed = 0
        self.maps: list[tuple[int, ...]] = []
        self.bare = False  # the loop recorded no pass: the assembly rebuilds them (set by the continuous loop)

    def run(self) -> Schedule:
        """Run the policy's loop (static's batches, or the continuous loop's phases) and assemble its Schedule."""
        if self.pol.forms_batches:
            self._static()
        else:
            ContinuousLoop(self).run()
        return assemble(self)

    def stretch(self, L, rows, prefill, ctx0, clock, used, largest, priced_rows=None):
        """Record L passes whose rows are fixed (the context grows by `rows` a pass); return the clock after them.

        `priced_rows`: the rows the cost model is told of, when not `rows` (a static prompt pass's rectangle).
        """
        wake = self.wake(clock - self.last_end) if self.wake is not None and clock > self.last_end else None
        if self.unit:
            end = clock + L
        elif L == 1:
            cost = self.step_ms(rows if priced_rows is None else priced_rows, prefill, ctx0)
            end = clock + (cost if wake is None else cost + wake)
        else:
            age = np.arange(L, dtype=np.int64)
            costs = np.array(
                np.broadcast_to(self.cost.pass_ms(np.full(L, rows), np.full(L, prefill), ctx0 + rows * age), (L,)),
                dtype=float,
            )
            if wake is not None:  # the stretch's first pass follows an idle gap
                costs[0] += wake
            costs[0] += clock  # ((clock + c0) + c1) + ...: the order one-pass-at-a-time adds them, bit for bit
            ends = np.cumsum(costs)
            self.ends[len(self.st) // STRETCH_FIELDS] = ends
            end = float(ends[-1])
        self.st.extend((L, rows, prefill, ctx0, clock, end, used, largest))
        self.last_end = end
        if self.record_pool:
            owners = tuple(self.order[o] if o >= 0 else -1 for o in self.pool.owners())
            self.maps.extend([owners] * L)
        return end

    def cut(self, L, arrival):
        """Cut the last (costed) stretch at the pass whose end first sees `arrival`; return its passes and end."""
        at = len(self.st) // STRETCH_FIELDS - 1
        ends = self.ends[at]
        j = int(np.searchsorted(ends, arrival, side="left")) + 1
        if j >= L:
            return L, float(ends[-1])
        self.ends[at] = ends[:j]
        self.st[-STRETCH_FIELDS] = j
        self.st[-3] = self.last_end = float(ends[j - 1])  # the stretch's end clock
        if self.record_pool:
            del self.maps[len(self.maps) - (L - j) :]
        return j, float(ends[j - 1])

    def _static(self):
        n, A, P, OUT, pool = len(self.A), self.A, self.P, self.OUT, self.pool
        k, p, clock = 0, 0, 0.0
        while k < n:
            clock = float(self.pol.batch_forms_at(A, k, self.slots, self.timeout, clock))
            size = 0
            while size < self.slots and k + size < n and A[k + size] <= clock:
                size += 1
            if self.limited:
                size = self._rows_that_fit(k, size)
            members = range(k, k + size)
            width = max(P[j] for j in members)
            length = max(OUT[j] for j in members)
            for row, j in enumerate(members):
                self.slot[j], self.start[j] = row, p
                self.finish[j], self.release[j] = p + OUT[j], p + length
                self.cells.extend((j, row, p, p + OUT[j], GENERATING, 0))
                if OUT[j] < length:
                    self.cells.extend((j, row, p + OUT[j], p + length, PADDING, OUT[j]))
                pool.allocate(j, width + self.reserve)
            used, largest = pool.used, pool.largest_free_run()
            clock = self.stretch(1, 0, size * width, 0, clock, used, largest, size if self.rectangles else None)
            if length > 1:
                clock = self.stretch(length - 1, size, 0, size * (width + 1), clock, used, largest)
            for j in members:
                pool.release(j)
            p += length
            k += size
        self.passes = p

    def _rows_that_fit(self, k: int, size: int) -> int:
        """Return how many of the `size` waiting from k fit as dense rows (each the widest prompt + the reservation).

        Rows fit while their count times one row's blocks fits the pool; both grow with the rows, so one pass with a
        running widest prompt finds the last that fits (at least one: check_fits saw to that).
        """
        rows, widest, blocks_for = 1, self.P[k], self.memory.blocks_for
        while rows < size:
            wider = max(widest, self.P[k + rows])
            if (rows + 1) * blocks_for(wider + self.reserve) > self.pool.size:
                break
            rows, widest = rows + 1, wider
        return rows

def as_run(s: Schedule) -> Run:
    """Return a step-clock schedule as the `Run` every view draws: times are steps, cells carry R and F."""
    if s.cost != "unit":
        raise ValueError("as_run needs a step-clock schedule (cost None)")
    at = lambda passes: s.pass_start[passes].astype(np.int64) if len(passes) else passes  # noqa: E731
    end = lambda passes: s.pass_end[passes - 1].astype(np.int64) if len(passes) else passes  # noqa: E731
    cells = s.cells.copy()
    if len(cells):
        lo = at(cells[:, 2])
        cells[:, 3] = lo + (cells[:, 3] - cells[:, 2])  # a running request's passes follow each other, gap-free
        cells[:, 2] = lo
    plain = not s.events and not (cells[:, 4] >= RECOMPUTE).any() if len(cells) else True
    return Run(
        s.requests,
        s.slots,
        s.rules,
        int(s.batch_timeout),
        at(s.start_pass),
        end(s.finish_pass),
        s.slot,
        end(s.release_pass),
        cells=None if plain else cells,
        schedule=s,
    )


def memory_waits(s: Schedule) -> list:
    """Return every step a request waited for memory with a slot empty (needs `record_pool`; step clock)."""
    if s.pool_maps is None or s.cost != "unit":
        raise ValueError("memory_waits needs a step-clock schedule with record_pool=True")
    return as_run(s).memory_waits
