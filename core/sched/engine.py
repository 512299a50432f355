"""One scheduler for every policy on either clock: it asks the KV block manager who fits, and jumps between events.

Each boundary between passes runs, in order: arrivals join the queue; finished requests retire (their slot and
blocks freed); under a limited paged pool, running requests that need a new block take one, preempting the most
recently admitted when none is free; then the policy admits (continuous: first come, first served into the lowest
free slot while the head fits; static: a whole batch whose dense rectangle fits). Between events nothing changes
but the token counts, so a stretch of identical decode passes is run (or costed) as one. The semantics are
DESIGN.md's "Memory"; with unlimited memory the schedules are today's, bit for bit (tests/test_memory.py).

For speed the loop keeps only flat lists of numbers (cells, stretches) and turns them into arrays once at the end;
what follows from the cells (an unlimited pool's counts, blocks filled per pass, the cells of a run nobody left
early) is computed there with NumPy, not in the loop.
"""

from __future__ import annotations

import copy
import heapq
import math
from collections import deque
from collections.abc import Sequence

import numpy as np

from core.clock.cost import StepCost, UnitCost, prices_rectangles, scalar_pass_ms, wake_of
from core.kv.memory import UNLIMITED, KVPool, MemoryConfig
from core.limits import MAX_DRAIN_STEPS, MAX_SLOTS, check_prefill_passes, check_workload
from core.sched.fits import check_fits, check_prompt_cap
from core.sched.policies import Policy, get_policy
from core.sched.run import Run
from core.sched.schedule_record import Event, Schedule
from core.sched.states import GENERATING, IDLE, PADDING, PAUSED, PREFILL, RECOMPUTE
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
    _validate(slots, pol, batch_timeout, token_budget, memory)
    requests = tuple(requests)
    check_workload(len(requests), sum(r.output_tokens for r in requests))
    check_fits(requests, memory, pol)
    check_prompt_cap(requests, pol)
    if pol.has_token_budget:  # a chunk pass is recorded on its own: bound them before the loop, not after
        check_prefill_passes(sum(max(1, r.prompt_tokens) for r in requests), token_budget)
    return _Engine(requests, slots, pol, memory, cost, float(batch_timeout), token_budget, record_pool).run()


def _as_array(values: list, dtype) -> np.ndarray:
    """Return a flat list of numbers as an array (fromiter: about twice np.array's speed on a long list of ints)."""
    return np.fromiter(values, dtype=dtype, count=len(values))


# A stretch of passes, as the loop records it (flat, STRETCH_FIELDS numbers each): its passes, their decoding rows
# (their context grows by that many tokens a pass), prefill tokens, the first pass's context, the clock at its start
# and at its end, the blocks held and the longest free run.
STRETCH_FIELDS = 8


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
        self.order = sorted(range(n), key=arrivals.__getitem__)  # FCFS; stable keeps trace order on ties
        queue = self.queue = [requests[i] for i in self.order]
        self.A = [r.arrival for r in queue]
        self.P = [r.prompt_tokens or 1 for r in queue]  # prompt_length: an empty prompt still takes a pass
        self.OUT = [r.output_tokens for r in queue]
        self.reserve = memory.reserve_tokens or max(self.OUT, default=1)
        # What a reservation holds beyond the prompt: the request's own max_tokens where the client gave one (as
        # TGI's and TensorRT-LLM's schedulers read it), else the traffic's cap; a static row keeps the traffic's.
        self.RES = [r.max_tokens or self.reserve for r in queue]
        self.record_pool = record_pool
        self.pool = KVPool(memory, track_blocks=record_pool)  # block ids only where the views draw the map
        self.limited = not memory.unlimited  # an unlimited pool refuses nothing: the loop asks it nothing
        self.paged_growth = self.limited and not pol.reserves_whole_life(memory.allocation)
        # Without growth nobody is preempted, and without a budget every prompt fits its first pass: each request is
        # then one generating cell from its start to its finish, closed as it retires, which _record draws itself.
        # A policy that pauses the decoding rows for a prompt pass splits their cells too.
        self.plain = not (pol.forms_batches or pol.has_token_budget or self.paged_growth or pol.pauses_decoders)
        self.slot = [0] * n
        self.start = [-1] * n
        self.first = [-1] * n
        self.finish = [0] * n
        self.release = [0] * n  # static only: a continuous slot frees as its request finishes
        # Flat lists, turned into arrays once at the end: no per-cell or per-pass Python objects survive the loop.
        self.cells: list[int] = []  # (request, slot, first pass, end pass, state, tokens emitted at its start) each
        self.st: list[float] = []  # the stretches, STRETCH_FIELDS numbers each
        self.ends: dict[int, np.ndarray] = {}  # stretch index -> its passes' ends, where they were costed as an array
        self.events: list[Event] = []
        self.recomputed = 0
        self.maps: list[tuple[int, ...]] = []

    def run(self) -> Schedule:
        if self.pol.forms_batches:
            self._static()
        else:
            self._continuous()
        return self._record()

    def _stretch(self, L, rows, prefill, ctx0, clock, used, largest, priced_rows=None):
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

    def _cut(self, L, arrival):
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

    def _continuous(self):
        """Admit, grow, preempt and retire between passes; jump over passes where none of that happens."""
        n, A, P, OUT, pool, order = len(self.A), self.A, self.P, self.OUT, self.pool, self.order
        slot, start, first, finish = self.slot, self.start, self.first, self.finish
        events, add_cell = self.events, self.cells.extend
        pol = self.pol
        chunked, budget, RES, unit = pol.has_token_budget, self.budget, self.RES, self.unit
        cap = pol.prefill_chunk_cap or budget  # one prompt's tokens in a pass (vLLM's long_prefill_token_threshold)
        # The policy's order: a deque (arrival; a preempted request back at the front) or a queue by its key, where
        # an arrival may become the head: then a refused head is not the last one refused, and an arrival may be
        # admitted past a waiting head, so stretches stop at arrivals while a slot is free.
        waiting = pol.new_queue(self.queue)
        keyed = not isinstance(waiting, deque)
        # Victims are asked for only where blocks grow one by one; elsewhere nobody is preempted.
        ranks = [pol.victim_rank(r) for r in self.queue] if self.paged_growth else []
        ranked = len(set(ranks)) > 1  # else the victim is simply the most recently admitted
        contiguous, limited, growth = pool.contiguous, self.limited, self.paged_growth
        reserving = pol.reserves_whole_life(self.memory.allocation)  # prompt + the output cap, held to the end
        paged_limited = limited and not contiguous
        plain = self.plain
        # A pass with a prompt pauses the decoding rows (TGI); a gate decides when the waiting join the running.
        pauses, gated = pol.pauses_decoders, pol.gates_admission
        pcap = pol.prompt_tokens_cap(P)  # the most prompt tokens a pass admits (0: no cap)
        since, after_pause = 0, False  # decode passes since the last pass with a prompt; that pass paused the rows
        paused_open: list[int] = []  # decoding requests whose paused cell is open
        ahead: set[int] = set()  # paused requests that already took the block their next token fills
        bs, size = pool.block_size, pool.size
        track = self.record_pool  # block ids matter only for the recorded map
        quick = unit and not track  # a stretch is recorded inline, without a call
        record, stretch = self.st.extend, self._stretch
        push, pop = heapq.heappush, heapq.heappop
        # The block manager's answers and actions, bound once: they run once per admission, release or growth.
        can_allocate, allocate, release, can_grow, grow = (
            pool.can_allocate,
            pool.allocate,
            pool.release,
            pool.can_grow,
            pool.grow,
        )
        held = pool.held  # blocks per request: where its next block falls
        g = [0] * n  # tokens emitted (decoding: recomputed from base when it leaves)
        base = [0] * n  # decoding: tokens emitted before pass q are q + base
        gen = [0] * n  # invalidates a request's finish entry when it is preempted
        adm = [0] * n  # when each running request was (last) admitted
        cell_state, cell_from, cell_g = [0] * n, [0] * n, [0] * n  # each running request's open cell
        # Paged growth: a decoding request needs its next block every block_size passes, at passes congruent to its
        # phase; buckets[phase] holds those requests, so a boundary finds who grows without a heap entry per block.
        phase = [0] * n
        buckets: list[dict[int, None]] = [{} for _ in range(bs)] if growth else []
        free = list(range(self.slots))
        running: dict[int, None] = {}  # admission order: the last key is the most recently admitted
        prefilling: dict[int, list[int]] = {}  # chunked: request -> [prefilled, target]
        fin: list[tuple[int, int, int, int]] = []  # (finish pass, slot, request, gen)
        count = 0  # decoding requests
        ctx_base = 0  # sum over decoding of (P + base): their context at pass q is ctx_base + count * q
        nxt, p, clock = 0, 0, 0.0
        noted: set[int] = set()
        admissions = recomputed = 0  # admission order, readmissions included: growth is served oldest first
        # Blocks come free only when somebody leaves, and only a leaver can become the head: a head refused since
        # the last release is refused again, so it is not asked again until something is released.
        releases, refused = 0, (-1, -1)  # (releases, head) at the last refusal

        def leave(k: int, q: int) -> None:
            """Free the slot and blocks of request k, which leaves before pass q (finished or preempted)."""
            nonlocal count, ctx_base, releases
            releases += 1
            if k in prefilling:
                del prefilling[k]
            else:
                g[k] = q + base[k]
                count -= 1
                ctx_base -= P[k] + base[k]
                if growth:
                    del buckets[phase[k]][k]
            del running[k]
            ahead.discard(k)
            pool.release(k)
            s = slot[k]
            push(free, s)
            gen[k] += 1
            if q > cell_from[k]:
                add_cell((k, s, cell_from[k], q, cell_state[k], cell_g[k]))

        while True:
            while nxt < n and A[nxt] <= clock:
                waiting.append(nxt)
                nxt += 1
            while fin and fin[0][0] <= p:  # retire (a finished request has no other live entry: gen stays)
                _, s, k, gn = pop(fin)
                if gn != gen[k]:
                    continue
                finish[k] = p  # and its release: a continuous slot frees as its request finishes
                count -= 1
                ctx_base -= P[k] + base[k]
                if growth:
                    del buckets[phase[k]][k]
                del running[k]
                if limited:
                    release(k)
                    releases += 1
                push(free, s)
                if not plain and p > cell_from[k]:
                    add_cell((k, s, cell_from[k], p, cell_state[k], cell_g[k]))
            preempted = False
            due = buckets[p % bs] if growth else None
            if due and ahead:
                due = {k: None for k in due if k not in ahead}
            if due:
                if not track and can_grow(len(due)):
                    grow(due)  # a block for each: nobody is preempted, so the order they are served in is moot
                else:
                    due = sorted(due, key=adm.__getitem__)  # oldest admitted first
                    served = min(len(due), pool.free)  # these take a free block each, as one by one they would
                    grow(due[:served])
                    for k in due[served:]:
                        if k not in running:
                            continue
                        tokens = P[k] + p + base[k] + 1
                        while not pool.can_append(k, tokens):
                            if ranked:  # the policy's least wanted, then the most recently admitted
                                victim = max(running, key=lambda j: (ranks[j], adm[j]))
                            else:
                                victim = next(reversed(running))
                            slot_left = slot[victim]
                            leave(victim, p)
                            waiting.appendleft(victim)
                            events.append(Event(p, "preempt", order[victim], slot_left, g[victim], pool.free, order[k]))
                            preempted = True
                            if victim == k:
                                break
                        if k in running:
                            pool.append(k, tokens)
            grown = [k for k in due if k in running] if due and pauses else ()
            # The pass's plan: decoding rows first, then prompt chunks in admission order (chunked), then admissions.
            chunks: list = []  # chunked: (request, tokens this pass); continuous: the requests admitted
            left = prefill = prefilled = 0  # budget left; prompt tokens in this pass; their cached prompt before it
            if chunked:
                left = budget if pauses else budget - count  # a pausing policy's prompt pass holds no decoding row
                for k, (done_, target) in prefilling.items():
                    c = min(target - done_, left, cap)
                    left -= c
                    chunks.append((k, c))
                    prefill += c
                    prefilled += done_
            limit = n  # how many this pass may admit
            if gated and count and waiting and free and not preempted:
                fitting = self._fitting(waiting, len(free), pcap)
                if not pol.admits_now(fitting, count, since, after_pause):
                    limit = 0
            taken = 0
            while not preempted and waiting and free and (left > 0 or not chunked) and taken < limit:
                k = waiting[0]
                if pcap and taken and prefill + P[k] + g[k] > pcap:
                    break  # the pass's prompt tokens are spent (check_prompt_cap: a first prompt always fits)
                tokens = P[k] + (RES[k] if reserving else g[k] + 1)
                if limited and (refused == (releases, k) or not can_allocate(k, tokens)):
                    refused = (releases, k)
                    if k not in noted:
                        noted.add(k)
                        events.append(Event(p, "blocked", order[k], free[0], -(-tokens // bs), pool.free))
                    break
                waiting.popleft()
                taken += 1
                if noted:
                    noted.discard(k)
                if limited:
                    allocate(k, tokens)
                slot[k] = pop(free)
                running[k] = None
                adm[k] = admissions
                admissions += 1
                if start[k] < 0:
                    start[k] = p
                recomputed += g[k]
                target = P[k] + g[k]
                if chunked:
                    c = min(target, left, cap)
                    left -= c
                    prefilling[k] = [0, target]
                    cell_state[k] = IDLE  # no cell open yet in this residency
                    chunks.append((k, c))
                    prefill += c
                else:
                    chunks.append(k)  # the whole prompt in this pass
                    prefill += target
            if not running:
                if nxt == n and not waiting:
                    break
                if waiting:  # check_fits makes an empty pool fit any head, and an idle pass has budget
                    raise RuntimeError("nothing runs but a request waits: the scheduler is stuck")
                clock = max(clock, float(A[nxt]))  # nothing runs till the next arrival
                continue
            used = pool.used
            largest = size - used if paged_limited else (pool.largest_free_run() if contiguous else 0)
            if chunks:  # one pass: somebody's prompt is in it
                paused = pauses and count > 0
                if paused:  # the decoding rows emit nothing this pass: each finishes a pass later
                    new = () if chunked else set(chunks)
                    for k in running:
                        if k in prefilling or k in new:
                            continue
                        if cell_state[k] != PAUSED:
                            if p > cell_from[k]:
                                add_cell((k, slot[k], cell_from[k], p, cell_state[k], cell_g[k]))
                            cell_state[k], cell_from[k], cell_g[k] = PAUSED, p, p + base[k]
                            paused_open.append(k)
                        base[k] -= 1
                        if growth:
                            phase[k] = (phase[k] + 1) % bs
                    if growth:  # every decoding request's next block falls a pass later: the buckets turn by one
                        buckets.insert(0, buckets.pop())
                        ahead.update(grown)
                    ctx_base -= count
                    fin[:] = [(f + 1, s, k, gn) for f, s, k, gn in fin]  # a uniform shift keeps the heap a heap
                rows_now = 0 if paused else count
                ctx = prefilled + (0 if paused else ctx_base + count * p)
                if quick:
                    end = clock + 1
                    record((1, rows_now, prefill, ctx, clock, end, used, largest))
                else:
                    end = stretch(1, rows_now, prefill, ctx, clock, used, largest)
                clock = end
                p += 1
                since, after_pause = 0, paused
                if chunked:  # a prompt whose last chunk was in the pass decodes from now on; the others wait
                    done = []
                    for k, c in chunks:
                        state = prefilling[k]
                        state[0] += c
                        if state[0] < state[1]:
                            if cell_state[k] != PREFILL:
                                cell_state[k], cell_from[k], cell_g[k] = PREFILL, p - 1, g[k]
                            continue
                        del prefilling[k]
                        done.append(k)
                    chunks = done
                for k in chunks:  # the pass gave k its next token: from pass p it decodes
                    gk, s = g[k], slot[k]
                    b = base[k] = gk + 1 - p
                    count += 1
                    ctx_base += P[k] + b
                    push(fin, (OUT[k] - b, s, k, gen[k]))
                    if plain:  # its first pass is its start, its cell _record's
                        continue
                    if first[k] < 0:
                        first[k] = p - 1
                    g[k] = gk + 1
                    if growth:
                        ph = phase[k] = (held[k] * bs - P[k] - b) % bs
                        buckets[ph][k] = None
                    if chunked and cell_state[k] == PREFILL and p - 1 > cell_from[k]:  # its earlier chunks' cell
                        add_cell((k, s, cell_from[k], p - 1, PREFILL, cell_g[k]))
                    if gk:  # a readmission's first pass recomputes; the cell that follows generates
                        add_cell((k, s, p - 1, p, RECOMPUTE, gk))
                        cell_state[k], cell_from[k], cell_g[k] = GENERATING, p, gk + 1
                    else:
                        cell_state[k], cell_from[k], cell_g[k] = GENERATING, p - 1, 0
                continue
            while fin and fin[0][3] != gen[fin[0][2]]:
                pop(fin)
            for k in paused_open:  # the rows decode again from this pass
                if k in running and cell_state[k] == PAUSED:
                    add_cell((k, slot[k], cell_from[k], p, PAUSED, cell_g[k]))
                    cell_state[k], cell_from[k] = GENERATING, p
            paused_open.clear()
            ahead.clear()  # this pass fills the blocks they took
            L = 1 if preempted else fin[0][0] - p  # after a preemption, admission is tried at the next boundary
            if gated and waiting and free and L > 1:  # the gate may open before anyone retires
                again = 1 if after_pause else pol.recheck_in(since)
                if again is not None:
                    L = min(L, again)
            if growth and L > 1:  # stop at the next pass where somebody needs a block
                for d in range(1, min(L, bs + 1)):
                    if buckets[(p + d) % bs]:
                        L = d
                        break
            # An arrival may be admitted at the first pass after it (past a waiting head, or opening a gate).
            cut = free and (keyed or gated or not waiting) and nxt < n
            if cut and unit:
                L = min(L, max(1, math.ceil(A[nxt] - clock)))
            ctx = ctx_base + count * p
            if quick:
                end = clock + L
                record((L, count, 0, ctx, clock, end, used, largest))
            else:
                end = stretch(L, count, 0, ctx, clock, used, largest)
                if cut and not unit and L > 1:
                    L, end = self._cut(L, A[nxt])
            clock = end
            p += L
            since, after_pause = since + L, False
        self.passes = p
        self.recomputed = recomputed

    def _fitting(self, waiting, free_slots: int, pcap: int) -> int:
        """Return how many waiting requests, from the head, a pass would admit: slots, prompt tokens, the pool.

        For a gated policy, which reserves every request's whole life (checked at registration); the pool is asked
        on a copy, so the admission that follows (or not) finds it as it was.
        """
        P, pool = self.P, self.pool
        trial = copy.deepcopy(pool) if self.limited and pool.contiguous else None
        free_blocks = pool.free if self.limited else 0
        fitting = prompts = 0
        for k in waiting:
            if fitting == free_slots or (pcap and fitting and prompts + P[k] > pcap):
                break
            tokens = P[k] + self.RES[k]
            if trial is not None:
                if not trial.can_allocate(k, tokens):
                    break
                trial.allocate(k, tokens)
            elif self.limited:
                need = self.memory.blocks_for(tokens)
                if need > free_blocks:
                    break
                free_blocks -= need
            fitting += 1
            prompts += P[k]
        return fitting

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
                self.slot[j], self.start[j], self.first[j] = row, p, p
                self.finish[j], self.release[j] = p + OUT[j], p + length
                self.cells.extend((j, row, p, p + OUT[j], GENERATING, 0))
                if OUT[j] < length:
                    self.cells.extend((j, row, p + OUT[j], p + length, PADDING, OUT[j]))
                pool.allocate(j, width + self.reserve)
            used, largest = pool.used, pool.largest_free_run()
            clock = self._stretch(1, 0, size * width, 0, clock, used, largest, size if self.rectangles else None)
            if length > 1:
                clock = self._stretch(length - 1, size, 0, size * (width + 1), clock, used, largest)
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

    def _plain_cells(self, start: np.ndarray, finish: np.ndarray, slot: np.ndarray) -> np.ndarray:
        """Return the cells of a schedule where nobody is preempted or chunked, in the order the loop closes them.

        Each request (in FCFS order) generates in one cell from its start to its finish; cells close as requests
        retire, at each boundary in slot order (the finish heap's order).
        """
        order = np.lexsort((slot, finish))
        cells = np.zeros((len(order), 6), dtype=np.int64)
        cells[:, 0], cells[:, 1], cells[:, 2], cells[:, 3] = order, slot[order], start[order], finish[order]
        cells[:, 4] = GENERATING
        return cells

    def _unlimited_blocks(self, cells: np.ndarray, passes: int) -> np.ndarray:
        """Return the blocks an unlimited pool holds at each pass: what each running request was given at admission.

        Nobody is preempted, so each admission is a first (nothing generated yet) and holds its blocks until it
        finishes; its cells (a prompt's chunks, then its tokens) tile that span once.
        """
        prompt = np.array(self.P, dtype=np.int64)
        whole_life = self.pol.reserves_whole_life(self.memory.allocation)
        tokens = prompt + (np.array(self.RES, dtype=np.int64) if whole_life else 1)
        held = (-(-tokens // self.memory.block_size))[cells[:, 0]]
        diff = np.bincount(cells[:, 2], held, passes + 1) - np.bincount(cells[:, 3], held, passes + 1)
        return np.cumsum(diff)[:passes].astype(np.int64)  # float sums of integers far below 2**53: exact

    def _token_blocks(self, cells: np.ndarray, passes: int) -> np.ndarray:
        """Return the blocks each pass's tokens fill: per non-padding cell, its prompt and tokens so far, plus one.

        A cell's count rises by one every block_size passes, so the counts are summed as a difference array (its
        first pass's count, one more at each pass that starts a block, its last count taken off where it ends):
        work in blocks crossed, not in cell-passes.
        """
        bs = self.memory.block_size
        live = cells[cells[:, 4] != PADDING]
        lo, hi = live[:, 2], live[:, 3]
        c = np.array(self.P, dtype=np.int64)[live[:, 0]] + live[:, 5] - lo + 1  # a cell holds c + q tokens at pass q
        first_count, last_count = -(-(c + lo) // bs), -(-(c + hi - 1) // bs)
        cross = lo + 1 + (1 - (c + lo + 1)) % bs  # its first pass after lo holding c + q = 1 (mod bs): a new block
        crossings = np.maximum(0, -(-(hi - cross) // bs))
        paused = live[:, 4] == PAUSED  # a paused row holds its prompt and tokens so far, and takes no new one
        if paused.any():
            still = -(-(c[paused] + lo[paused] - 1) // bs)
            first_count[paused], last_count[paused], crossings[paused] = still, still, 0
        within = np.arange(crossings.sum()) - np.repeat(np.cumsum(crossings) - crossings, crossings)
        at = np.repeat(cross, crossings) + bs * within
        size = passes + 1
        diff = np.bincount(lo, first_count, size) - np.bincount(hi, last_count, size) + np.bincount(at, minlength=size)
        return np.cumsum(diff)[:passes].astype(np.int64)  # float sums of integers far below 2**53: exact

    def _passes(self) -> tuple[np.ndarray, ...]:
        """Return per pass: start, end, decoding rows, prefill tokens, context, blocks held, longest free run."""
        passes = self.passes
        st = _as_array(self.st, float).reshape(-1, STRETCH_FIELDS)
        lengths = st[:, 0].astype(np.int64)
        opens_at = np.cumsum(lengths) - lengths  # each stretch's first pass: the stretches tile the passes
        col = lambda i: np.repeat(st[:, i].astype(np.int64), lengths)  # noqa: E731 - exact: counts below 2**53
        age = np.arange(passes, dtype=np.int64) - np.repeat(opens_at, lengths)
        rows = col(1)
        begun = np.repeat(st[:, 4], lengths)
        if self.unit:
            starts = begun + age
            ends = starts + 1.0
        else:
            ends = np.repeat(st[:, 5], lengths)  # a one-pass stretch: costed by the scalar function as the loop did
            for at, costed in self.ends.items():
                ends[opens_at[at] : opens_at[at] + len(costed)] = costed
            starts = np.concatenate(([0.0], ends[:-1])) if passes else np.zeros(0)
            opens = age == 0  # a stretch's first pass starts where the clock stood (after an idle jump, say)
            starts[opens] = begun[opens]
        return starts, ends, rows, col(2), col(3) + rows * age, col(6), col(7)

    def _record(self) -> Schedule:
        n, passes = len(self.A), self.passes
        starts, ends, rows, prefill, context, blocks, largest = self._passes()
        start, finish, slot = (_as_array(xs, np.int64) for xs in (self.start, self.finish, self.slot))  # FCFS order
        if self.plain:
            cells = self._plain_cells(start, finish, slot)
            first = start
        else:
            cells = _as_array(self.cells, np.int64).reshape(-1, 6)
            first = _as_array(self.first, np.int64)
        if not self.limited and not self.pol.forms_batches and len(cells):
            blocks = self._unlimited_blocks(cells, passes)
        token_blocks = self._token_blocks(cells, passes) if self.limited else np.zeros(passes, dtype=np.int64)
        release = _as_array(self.release, np.int64) if self.pol.forms_batches else finish
        back = np.empty(n, dtype=np.int64)
        back[self.order] = np.arange(n)
        out_cells = cells[:, :5].copy()
        out_cells[:, 0] = _as_array(self.order, np.int64)[cells[:, 0]]
        return Schedule(
            requests=self.requests,
            slots=self.slots,
            policy=self.pol.name,
            memory=self.memory,
            batch_timeout=self.timeout,
            token_budget=self.budget,
            cost="unit" if self.unit else self.cost.name,
            slot=slot[back],  # fancy indexing copies: no two fields share an array
            start_pass=start[back],
            first_pass=first[back],
            finish_pass=finish[back],
            release_pass=release[back],
            cells=out_cells,
            pass_start=starts,
            pass_end=ends,
            pass_rows=rows,
            pass_prefill=prefill,
            pass_context=context,
            pass_blocks=blocks,
            pass_largest_free=largest,
            pass_token_blocks=token_blocks,
            events=tuple(self.events),
            recomputed_tokens=self.recomputed,
            pool_maps=tuple(self.maps) if self.record_pool else None,
        )


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
        s.policy,
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
