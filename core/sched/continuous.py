"""The scheduling loop of every policy that admits between passes, one named phase per method.

At each boundary between passes the loop runs, in order: `arrive` (arrivals join the waiting queue), `retire`
(finished requests free their slot and blocks), `grow_or_preempt` (under a limited paged pool, running requests
take the block their next token needs, preempting the policy's victim when none is free), `plan_pass` (the prompt
chunks already prefilling, under a token budget), `admit` (the queue's head into the lowest free slot while it fits
the pool and the pass), then `run_prompt_pass` (a pass that holds a prompt) or `jump` (a stretch of identical
decode passes, run or costed as one, up to the next event). The rules are the policy's and the pool's answers; the
semantics are docs/design.md's. A policy that prefills first (SGLang) grows or retracts only before a decode pass,
after `admit`, and admits against its estimate of the running requests' tokens to come (`room`). The loop keeps flat
lists of numbers only: `_Engine` records the passes and assemble.py turns them into a Schedule. Here: `run`,
`arrive`, `retire` and `jump`; `grow_or_preempt` in blocks.py; `plan_pass`, `admit` and `run_prompt_pass` in
prompt_pass.py.
"""

from __future__ import annotations

import math
from collections import deque
from heapq import heappop, heappush

from core.sched.blocks import BlockPhases
from core.sched.policies import Policy
from core.sched.prompt_pass import Plan, PromptPass
from core.states import GENERATING, PAUSED


class ContinuousLoop(BlockPhases, PromptPass):
    """One continuous schedule's state between passes; `run` calls the phases at every boundary, in order."""

    def __init__(self, engine):
        e = self.engine = engine
        pol, pool = e.pol, e.pool
        self.pol, self.pool = pol, pool
        self.n, self.A, self.P, self.OUT, self.RES, self.order = len(e.A), e.A, e.P, e.OUT, e.RES, e.order
        self.slot, self.start, self.first, self.finish = e.slot, e.start, e.first, e.finish
        self.events, self.add_cell = e.events, e.cells.extend
        self.chunked, self.budget, self.unit = pol.has_token_budget, e.budget, e.unit
        self.cap = pol.prefill_chunk_cap or e.budget  # one prompt's tokens a pass (long_prefill_token_threshold)
        # The policy's order: a deque (arrival; a preempted request back at the front) or a queue by its key, where
        # an arrival may become the head: then a refused head is not the last one refused, and an arrival may be
        # admitted past a waiting head, so stretches stop at arrivals while a slot is free.
        # SGLang: an estimate of the running requests' tokens to come that admission leaves room for (binding on a
        # limited paged pool), with its new_token_ratio; it orders lof's queue by each request's max_new_tokens.
        self.est = pol.estimate(self.P, (r.max_tokens for r in e.queue), self.RES,
                                e.memory.kv_blocks * pool.block_size if e.limited else None)  # fmt: skip
        self.waiting = pol.new_queue(e.queue) if self.est is None else self.est.queue()
        self.keyed = not isinstance(self.waiting, deque)
        self.cuts = self.keyed or pol.gates_admission  # a stretch stops at an arrival even while others wait
        self.growth = e.paged_growth  # blocks grow one by one: the only place a victim is asked for
        self.binds = self.est is not None and self.growth
        self.full = -1  # SGLang's batch_is_full: the releases at a refusal, until a request leaves (-1: not full)
        # SGLang: a pass takes a prompt if it can, and only a decode pass asks for the decoding rows' next blocks; a
        # shortage there retracts the policy's victims at once, to the back of the queue.
        self.prefill_first, self.bulk = pol.prefill_first and self.growth, pol.retracts_in_bulk
        self._victims_state(pol, e.queue)
        self.limited, self.contiguous = e.limited, pool.contiguous
        self.reserving = pol.reserves_whole_life(e.memory.allocation)  # prompt + the output cap, held to the end
        # A prompt takes its blocks chunk by chunk, as each is scheduled (vLLM's allocate_slots), not all at admission.
        self.per_chunk = pol.allocates_per_chunk and self.chunked and self.growth
        self.plain = e.plain
        # A pass with a prompt pauses the decoding rows (TGI); a gate decides when the waiting join the running.
        self.pauses, self.gated = pol.pauses_decoders, pol.gates_admission
        self.pcap = pol.prompt_tokens_cap(self.P)  # the most prompt tokens a pass admits (0: no cap)
        self.cap_rows = pol.cap_counts_decoders  # the cap counts each decoding row's token too (TensorRT-LLM)
        self.since, self.after_pause = 0, False  # decode passes since the last pass with a prompt; it paused the rows
        self.paused_open: list[int] = []  # decoding requests whose paused cell is open
        self.ahead: set[int] = set()  # paused requests that already took the block their next token fills
        self.grown: list[int] | tuple = ()  # requests that took a block at this boundary (a pausing policy's)
        self.bs = pool.block_size
        self.track = e.record_pool  # block ids matter only for the recorded map
        self.quick = self.unit and not self.track  # a stretch is recorded inline, without a call
        # Plain, unlimited and on steps: nothing of a pass is recorded, the assembly rebuilds every pass from the
        # starts and finishes (assemble.bare_passes).
        self.bare = e.bare = self.quick and e.plain and not e.limited and not self.chunked
        self._requests_state(self.n)
        e.adm = self.adm  # a plain run's prefill cells close in admission order (assemble.plain_cells)
        self._queues_state(e.slots)
        # What the hot phases read and never rebind, gathered once: one attribute load per call, not ten.
        self.fixed_admit = (self.P, self.g, self.pcap, self.chunked, self.cap, self.limited, self.start, self.running,
                            self.slot, self.adm, self.cap_rows, self.stacks, self.ranks, self.prefilling,
                            self.cell_state)  # fmt: skip
        self.record, self.stretch, self.cut = e.st.extend, e.stretch, e.cut
        self.fixed_finish = (self.g, self.base, self.P, self.OUT, self.gen, self.slot, self.fin)
        self.fixed_start = (self.g, self.base, self.P, self.OUT, self.gen, self.slot, self.add_cell, self.cell_state,
                            self.cell_from, self.cell_g, self.growth, self.chunked, self.bs, self.phase, self.buckets,
                            self.pool.held)  # fmt: skip
        self.shortens = self.gated or self.growth  # else a stretch runs to the next finish (or arrival)
        self.fixed_retire = (self.gen, self.P, self.base, self.running, self.free, self.cell_from, self.finish,
                             self.cell_state, self.cell_g, self.add_cell)  # fmt: skip

    def _victims_state(self, pol, queue) -> None:
        """Set up whom a block shortage preempts: each request's rank, and each class's admissions in order."""
        # (A policy that ranks nobody leaves victim_rank as the base class has it: no call per request.)
        unranked = type(pol).victim_rank is Policy.victim_rank
        self.ranks = ([0] * self.n if unranked else [pol.victim_rank(r) for r in queue]) if self.growth else []
        # By arrival (vLLM's priority victim: max(running, key=(priority, arrival_time))), else by admission.
        self.by_arrival = pol.victim_by_arrival
        # Victims by admission: each class's requests in admission order, readmissions included (victim pops those
        # that left as it meets them); `victim` asks the least wanted class (the largest rank) first. With one class
        # the running requests' own order (admission) is enough.
        ranked = self.growth and not self.by_arrival and not unranked
        self.stacks = {r: [] for r in set(self.ranks)} if ranked else None
        self.rank_desc = sorted(self.stacks or (), reverse=True)

    def _requests_state(self, n: int) -> None:
        """Set up each request's counters between passes: tokens, admission, its open cell, its block phase."""
        self.g = [0] * n  # tokens emitted (decoding: recomputed from base when it leaves)
        self.base = [0] * n  # decoding: tokens emitted before pass q are q + base
        self.gen = [0] * n  # invalidates a request's finish entry when it is preempted
        self.adm = [0] * n  # when each running request was (last) admitted
        self.cell_state, self.cell_from, self.cell_g = [0] * n, [0] * n, [0] * n  # each running request's open cell
        # Paged growth: a decoding request needs its next block every block_size passes, at passes congruent to its
        # phase; buckets[phase] holds those requests, so a boundary finds who grows without a heap entry per block.
        self.phase = [0] * n
        self.buckets: list[dict[int, None]] = [{} for _ in range(self.bs)] if self.growth else []

    def _queues_state(self, slots: int) -> None:
        """Set up the free slots, the running and prefilling requests, the finish heap and the loop's counters."""
        self.free = list(range(slots))
        self.running: dict[int, None] = {}  # admission order: the last key is the most recently admitted
        self.prefilling: dict[int, list[int]] = {}  # chunked: request -> [prefilled, target]
        self.fin: list[tuple[int, int, int, int]] = []  # (finish pass, slot, request, gen)
        self.count = 0  # decoding requests
        self.ctx_base = 0  # sum over decoding of (P + base): their context at pass q is ctx_base + count * q
        self.nxt, self.p, self.clock = 0, 0, 0.0
        self.noted: set[int] = set()  # heads whose wait for memory is already in the events
        self.admissions = self.recomputed = 0  # admission order, readmissions included: growth serves oldest first
        # Blocks come free only when somebody leaves, and only a leaver can become the head: a head refused since
        # the last release is refused again, so it is not asked again until something is released.
        self.releases, self.refused = 0, (-1, -1, -1)  # (releases, head, tokens) at the last refusal
        self.plan = Plan()  # the pass being planned (one object, emptied for each pass)

    def run(self) -> None:
        """Run every boundary's phases until nobody runs, waits or will arrive; leave the passes on the engine."""
        # The phases, bound once: a boundary is a handful of calls (the loop visits about two per request).
        arrive, retire, grow_or_preempt, plan_pass, admit = (
            self.arrive, self.retire, self.grow_or_preempt, self.plan_pass, self.admit
        )
        run_prompt_pass, jump, running, waiting = self.run_prompt_pass, self.jump, self.running, self.waiting
        free, prefill_first, est = self.free, self.prefill_first, self.est  # `free` is one list throughout
        A, n, fin, chunked, binds = self.A, self.n, self.fin, self.chunked, self.binds
        # Growth is asked only at a boundary where somebody's next token starts a block (without growth nobody is
        # preempted); `buckets` is one list throughout, turned in place when a prompt pass pauses the rows.
        grows_first, buckets, bs = self.growth and not prefill_first, self.buckets, self.bs
        # Mostly every row due takes a free block and nobody is preempted: the pool answers that in one question, and
        # the phase is asked only where it does not (or where rows pause, or block ids are kept).
        grows = self.pool.try_grow if not (self.pauses or self.track) else None
        plan, prefilling = self.plan, self.prefilling  # every boundary plans in this one, emptied by a prompt pass
        while True:
            nxt, p = self.nxt, self.p
            if nxt < n and A[nxt] <= self.clock:  # the phases' own first test, here: most boundaries skip them
                arrive()
            if fin and fin[0][0] <= p:
                retire()
            due = buckets[p % bs] if grows_first else None  # whose next token starts a block at this pass
            preempted = False if not due or (grows and grows(due)) else grow_or_preempt(due)
            if chunked and prefilling:  # the prompts part way take their chunks first
                plan_pass(plan)
                preempted = preempted or plan.preempted  # a chunk's blocks preempted someone (per-chunk allocation)
            if not preempted and waiting and free:  # after a preemption, admission is tried at the next boundary
                admit(plan)
            if prefill_first and not plan.chunks:  # a decode pass: now the rows ask for their blocks
                due = buckets[p % bs]
                preempted = grow_or_preempt(due) if due else False
            if not running:
                if est is not None:
                    est.reset()  # SGLang's self_check_during_idle
                if self.nxt == n and not waiting:
                    break
                if waiting:  # check_fits makes an empty pool fit any head, and an idle pass has budget
                    raise RuntimeError("nothing runs but a request waits: the scheduler is stuck")
                self.clock = max(self.clock, float(A[self.nxt]))  # nothing runs till the next arrival
                continue
            if plan.chunks:
                run_prompt_pass(plan)
                if binds and prefilling:  # SGLang: the chunked request leaves the last batch, which
                    self.full = -1  # clears batch_is_full (get_next_batch_to_run)
            else:
                jump(preempted)
        self.engine.passes, self.engine.recomputed = self.p, self.recomputed

    def arrive(self) -> None:
        """Every request that has arrived by the clock joins the waiting queue, in the policy's order."""
        A, n, nxt, clock, waiting = self.A, self.n, self.nxt, self.clock, self.waiting
        while nxt < n and A[nxt] <= clock:
            waiting.append(nxt)
            nxt += 1
        self.nxt = nxt

    def retire(self) -> None:
        """Every request whose last token came out of the last pass leaves: its slot and blocks are free."""
        fin, p = self.fin, self.p
        gen, P, base, running, free, cell_from, finish, cell_state, cell_g, add_cell = self.fixed_retire
        count, ctx_base, plain, buckets, phase = self.count, self.ctx_base, self.plain, self.buckets, self.phase
        release, left = self.pool.release if self.limited else None, count
        while fin and fin[0][0] <= p:
            _, s, k, gn = heappop(fin)
            if gn != gen[k]:  # an entry from before a preemption (a finished request has no other live entry)
                continue
            finish[k] = p  # and its release: a continuous slot frees as its request finishes
            count -= 1
            ctx_base -= P[k] + base[k]
            if buckets:  # growth's (else none)
                del buckets[phase[k]][k]
            del running[k]
            if release:
                release(k)
            heappush(free, s)
            if not plain and p > cell_from[k]:
                add_cell((k, s, cell_from[k], p, cell_state[k], cell_g[k]))
        if release:
            self.releases += left - count  # one a leaver
        self.count, self.ctx_base = count, ctx_base

    def jump(self, preempted: bool) -> None:
        """Run the stretch of decode-only passes up to the next event (a finish, a block, a gate, an arrival)."""
        fin, gen, p = self.fin, self.gen, self.p
        while fin and fin[0][3] != gen[fin[0][2]]:
            heappop(fin)
        if self.pauses:  # only a pausing policy's prompt pass pauses rows and lets them take a block ahead
            if self.paused_open:
                self.resume_decoders(p)
            self.ahead.clear()  # this pass fills the blocks they took
            self.grown = ()
        L = 1 if preempted else fin[0][0] - p  # after a preemption, admission is tried at the next boundary
        if self.shortens and L > 1:
            L = self.shorten(L)
        # An arrival may be admitted at the first pass after it (past a waiting head, or opening a gate).
        nxt, clock = self.nxt, self.clock
        cut = self.free and (self.cuts or not self.waiting) and nxt < self.n
        if cut and self.unit:
            L = min(L, max(1, math.ceil(self.A[nxt] - clock)))
        if self.bare:
            end = clock + L
        else:  # a paged pool's longest free run is its free blocks: the assembly's (passes_of), not a call each
            pool = self.pool
            used, largest = pool.used, (pool.longest_run if self.contiguous else 0)
            if self.quick:
                end = clock + L
                self.record((L, self.count, 0, self.ctx_base + self.count * p, clock, end, used, largest))
            else:
                end = self.stretch(L, self.count, 0, self.ctx_base + self.count * p, clock, used, largest)
                if cut and not self.unit and L > 1:
                    L, end = self.cut(L, self.A[nxt])
        self.clock = end
        self.p = p + L
        if self.gated:  # only a gate reads the decode passes since the last prompt pass
            self.since, self.after_pause = self.since + L, False
        if self.est is not None:  # SGLang: each decode pass decays the ratio, but one whose boundary retracted
            self.est.decoded(L - preempted)

    def resume_decoders(self, p: int) -> None:
        """The rows a prompt pass paused decode again from pass p: their paused cells close."""
        for k in self.paused_open:
            if k in self.running and self.cell_state[k] == PAUSED:
                self.add_cell((k, self.slot[k], self.cell_from[k], p, PAUSED, self.cell_g[k]))
                self.cell_state[k], self.cell_from[k] = GENERATING, p
        self.paused_open.clear()

    def shorten(self, L: int) -> int:
        """Return the stretch of L decode passes cut at the next gate check or block crossing."""
        p = self.p
        if self.gated and self.waiting and self.free:  # the gate may open before anyone retires
            again = 1 if self.after_pause else self.pol.recheck_in(self.since)
            if again is not None:
                L = min(L, again)
        if self.growth and L > 1:  # stop at the next pass where somebody needs a block
            buckets, bs = self.buckets, self.bs
            for d in range(1, min(L, bs + 1)):
                if buckets[(p + d) % bs]:
                    return d
        return L
