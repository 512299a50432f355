"""The continuous loop's prompt side: the pass's plan, admission into it, and the pass that holds a prompt.

`plan_pass` puts the prompts already prefilling in the pass (under a token budget); `admit` takes the queue's head
into the lowest free slot while it fits the pool and the pass (a gated policy first asks its gate, `gate_fitting`);
`run_prompt_pass` runs a pass that holds a prompt (or its chunk): a pausing policy's decoding rows emit nothing in it
(TGI), and a prompt whose last chunk was in it decodes from the next pass. A mixin of `ContinuousLoop`
(core/sched/continuous.py), whose state it reads and changes.
"""

from __future__ import annotations

import copy
from heapq import heappop, heappush

from core.sched.schedule_record import Event
from core.states import GENERATING, IDLE, PAUSED, PREFILL, RECOMPUTE


class Plan:
    """A pass's plan: what it holds beside the decoding rows (prompt chunks or admissions) and their tokens.

    Under a token budget the pass's budget left is the budget less its decoding rows (unless they pause) and `prefill`.
    """

    __slots__ = ("chunks", "prefill", "prefilled", "preempted")

    def __init__(self):
        self.chunks: list = []  # chunked: (request, tokens this pass); otherwise the requests admitted
        self.prefill = 0  # prompt tokens in this pass
        self.prefilled = 0  # their cached prompt before it (context the pass reads)
        self.preempted = False  # a chunk's blocks preempted someone (per-chunk allocation)


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


class PromptPass:
    """The phases `plan_pass`, `admit` and `run_prompt_pass` of the continuous loop, and the steps they take."""

    def plan_pass(self, plan: Plan) -> None:
        """Put the prompts already prefilling in the empty plan, each its chunk of what the budget leaves the rows.

        `run` asks it only where a prompt is part way; a chunk may preempt others for its blocks (vLLM).
        """
        chunks, prefilling, per_chunk, cap = plan.chunks, self.prefilling, self.per_chunk, self.cap
        plan.preempted = False
        left = self.budget if self.pauses else self.budget - self.count  # a pausing pass holds no decoding row
        prefill = prefilled = 0
        # Per-chunk allocation may preempt a prefilling request for an older one's chunk: iterate over a copy.
        for k, (done, target) in list(prefilling.items()) if per_chunk else prefilling.items():
            c = min(target - done, left, cap)
            if per_chunk:
                if k not in prefilling:  # preempted for an older one's chunk
                    continue
                plan.prefill, plan.prefilled = prefill, prefilled  # take_chunk may take a victim's back
                left += self.take_chunk(k, done + c + (done + c == target), plan)
                prefill, prefilled = plan.prefill, plan.prefilled
                if k not in prefilling:
                    continue
            left -= c
            chunks.append((k, c))
            prefill += c
            prefilled += done
        plan.prefill, plan.prefilled = prefill, prefilled

    def admit(self, plan: Plan) -> None:
        """Admit the waiting, head first, into the lowest free slots while the head fits the pool and the pass.

        A head that does not fit blocks the queue (FCFS); a gated policy may keep everyone waiting this boundary.
        Each admitted request takes the lowest free slot and puts its prompt (or its first chunk) in the pass; a
        readmission's prompt covers the tokens it had generated, which are recomputed. `run` calls it while somebody
        waits and a slot is free.
        """
        waiting, free, releases, binds = self.waiting, self.free, self.releases, self.binds
        if binds and self.full == releases:
            return  # SGLang's batch_is_full: after a refusal nobody is admitted until a request leaves
        refused = self.refused
        if refused[1] >= 0 and refused[1] == waiting[0] and not self.per_chunk and (
            refused[0] == releases or not self.pool.can_allocate(refused[1], refused[2])
        ):  # The head was refused and needs the same blocks: none came free since, or too few for it.
            if binds:
                self.full = releases  # as its refusal says (a prompt pass may have cleared it since)
            return
        if self.gated and self.count:
            fitting = gate_fitting(self, len(free))
            if not self.pol.admits_now(fitting, self.count, self.since, self.after_pause):
                return
        (P, g, pcap, chunked, cap, limited, start, running, slot, adm, cap_rows, stacks, ranks, prefilling,
         cell_state) = self.fixed_admit  # fmt: skip
        p, chunks, taken = self.p, plan.chunks, 0
        admissions, recomputed = self.admissions, self.recomputed  # counted here, written back once
        rows = cap_rows and self.count  # the decoding rows' tokens, where the cap counts them (admission adds none)
        left = (self.budget if self.pauses else self.budget - self.count) - plan.prefill if chunked else 0
        while waiting and free and (not chunked or left > 0):
            k = waiting[0]
            if pcap and (taken or rows) and plan.prefill + P[k] + g[k] + rows > pcap:
                break  # the pass's tokens are spent (check_prompt_cap: a first prompt fits an empty pass)
            target = P[k] + g[k]
            c = min(target, left, cap) if chunked else target
            if limited and not self.takes_blocks(k, c, target, plan):
                break
            waiting.popleft()
            taken += 1
            slot[k] = heappop(free)
            running[k] = None
            if stacks is not None:
                stacks[ranks[k]].append(k)
            adm[k] = admissions
            admissions += 1
            if start[k] < 0:
                start[k] = p
            recomputed += g[k]
            if chunked:
                left -= c
                prefilling[k] = [0, target]
                cell_state[k] = IDLE  # no cell open yet in this residency
                chunks.append((k, c))
                plan.prefill += c
            else:
                chunks.append(k)  # the whole prompt in this pass
                plan.prefill += target
            if binds and self.room(plan) <= 0:  # SGLang: the estimate is spent (PrefillAdder.budget_state)
                self.full = self.releases
                break
        self.admissions, self.recomputed = admissions, recomputed

    def takes_blocks(self, k: int, c: int, target: int, plan: Plan) -> bool:
        """Ask the pool for head k's blocks (its first chunk's, or its reservation); allocate them or refuse k.

        Per-chunk allocation takes the first chunk's blocks (and its first token's, if the chunk ends the prompt);
        else the prompt and the first token, or the prompt and the output cap where the policy reserves.
        """
        if self.per_chunk:
            tokens = c + (c == target)
        else:
            tokens = self.P[k] + (self.RES[k] if self.reserving else self.g[k] + 1)
        refused = self.refused
        if refused[1] == k and refused[0] == self.releases and refused[2] == tokens:
            self.refuse(k, tokens)  # refused since the last release, for as many tokens: only a release frees blocks
            return False
        if self.binds:  # SGLang: the pool, then its estimate, before it allocates
            if not self.pool.can_allocate(k, tokens) or not self.est.admits(k, self.g[k], self.room(plan)):
                self.refuse(k, tokens)
                return False
            self.pool.allocate(k, tokens)
        elif not self.pool.take(k, tokens):
            self.refuse(k, tokens)
            return False
        if self.noted:
            self.noted.discard(k)
            if self.refused[1] == k:  # its refusal is spent: readmitted later, it is refused anew
                self.refused = (-1, -1, -1)
        return True

    def room(self, plan: Plan) -> float:
        """Return the tokens SGLang's estimate leaves for the next head (NewTokenEstimate.room).

        The free tokens less the decoding requests' tokens to come times the ratio, less the max_new_tokens of each
        prompt completing in this pass.
        """
        p, base, prefilling = self.p, self.base, self.prefilling
        decoding = [(k, p + base[k]) for k in self.running if k not in prefilling]
        completing = [k for k, c in plan.chunks if prefilling[k][0] + c == prefilling[k][1]]
        return self.est.room(self.pool.free * self.bs, decoding, completing)

    def refuse(self, k: int, tokens: int) -> None:
        """Note that head k does not fit the pool (once per wait: a blocked event for the views)."""
        self.refused = (self.releases, k, tokens)
        if self.binds:
            self.full = self.releases  # SGLang's batch_is_full
        if k not in self.noted:
            self.noted.add(k)
            need = -(-tokens // self.bs)
            self.events.append(Event(self.p, "blocked", self.order[k], self.free[0], need, self.pool.free))


    def run_prompt_pass(self, plan: Plan) -> None:
        """Run one pass that holds a prompt: a pausing policy's decoding rows wait; finished prompts then decode."""
        count, clock, end, chunks = self.count, self.clock, self.clock + 1, plan.chunks
        paused = self.pauses and count > 0
        if paused:
            self.pause_decoders(set() if self.chunked else set(chunks))
        if not self.bare:  # else the assembly rebuilds the pass; a paged pool's longest free run is the assembly's
            pool, rows_now = self.pool, 0 if paused else count
            used, largest = pool.used, (pool.longest_run if self.contiguous else 0)
            ctx = plan.prefilled + (0 if paused else self.ctx_base + count * self.p)
            if self.quick:
                self.record((1, rows_now, plan.prefill, ctx, clock, end, used, largest))
            else:
                end = self.stretch(1, rows_now, plan.prefill, ctx, clock, used, largest)
        p = self.p + 1
        self.clock, self.p, self.since, self.after_pause = end, p, 0, paused
        plan.chunks, plan.prefill, plan.prefilled = [], 0, 0  # spent: the next boundary plans in it afresh
        if not self.plain:
            self.start_decoding(self.chunks_done(chunks) if self.chunked else chunks)
            return
        # Plain, the common case, inline: no cell or block to note, only each finished prompt's finish
        # (start_decoding's first lines), a chunked one's after its last chunk (chunks_done's).
        g, base, P, OUT, gen, slot, fin = self.fixed_finish
        chunked, prefilling, first, ctx_base = self.chunked, self.prefilling, self.first, self.ctx_base
        for k in chunks:
            if chunked:
                k, c = k
                done = prefilling[k]
                done[0] += c
                if done[0] < done[1]:
                    continue
                del prefilling[k]
                first[k] = p - 1
            b = base[k] = g[k] + 1 - p
            count += 1
            ctx_base += P[k] + b
            heappush(fin, (OUT[k] - b, slot[k], k, gen[k]))
        self.count, self.ctx_base = count, ctx_base

    def pause_decoders(self, new: set) -> None:
        """A pausing policy's prompt pass: every decoding row emits nothing, so each finishes a pass later."""
        p, cell_state, cell_from = self.p, self.cell_state, self.cell_from
        for k in self.running:
            if k in self.prefilling or k in new:
                continue
            if cell_state[k] != PAUSED:
                if p > cell_from[k]:
                    self.add_cell((k, self.slot[k], cell_from[k], p, cell_state[k], self.cell_g[k]))
                cell_state[k], cell_from[k], self.cell_g[k] = PAUSED, p, p + self.base[k]
                self.paused_open.append(k)
            self.base[k] -= 1
            if self.growth:
                self.phase[k] = (self.phase[k] + 1) % self.bs
        if self.growth:  # every decoding request's next block falls a pass later: the buckets turn by one
            self.buckets.insert(0, self.buckets.pop())
            self.ahead.update(self.grown)
            self.grown = ()  # spent: a boundary where nobody grows does not ask grow_or_preempt, which resets it
        self.ctx_base -= self.count
        self.fin[:] = [(f + 1, s, k, gn) for f, s, k, gn in self.fin]  # a uniform shift keeps the heap a heap

    def chunks_done(self, chunks: list) -> list[int]:
        """Return the requests whose last prompt chunk was in the pass; the others wait for their next chunk."""
        done, prefilling, first, p = [], self.prefilling, self.first, self.p
        cell_state = None if self.plain else self.cell_state  # a plain run's prefill cells are the assembly's
        for k, c in chunks:
            state = prefilling[k]
            state[0] += c
            if state[0] < state[1]:
                if cell_state is not None and cell_state[k] != PREFILL:
                    cell_state[k], self.cell_from[k], self.cell_g[k] = PREFILL, p - 1, self.g[k]
                continue
            del prefilling[k]
            done.append(k)
            if first[k] < 0:  # the pass of its last chunk gave its first token (else its start pass did)
                first[k] = p - 1
        return done

    def start_decoding(self, started: list[int]) -> None:
        """The last pass gave each of `started` its next token: from now on each decodes (its finish, cells, block).

        Not asked in a plain run, whose cells are the assembly's (plain_cells): `run_prompt_pass` notes their finishes.
        """
        p, ctx_base, count, fin = self.p, self.ctx_base, self.count, self.fin
        g, base, P, OUT, gen, slot, add_cell, state, cell_from, cell_g, growth, chunked, bs, phase, buckets, held = (
            self.fixed_start
        )
        for k in started:
            gk, s = g[k], slot[k]
            b = base[k] = gk + 1 - p
            count += 1
            ctx_base += P[k] + b
            heappush(fin, (OUT[k] - b, s, k, gen[k]))
            g[k] = gk + 1
            if growth:
                ph = phase[k] = (held[k] * bs - P[k] - b) % bs
                buckets[ph][k] = None
            if chunked and state[k] == PREFILL and p - 1 > cell_from[k]:  # its earlier chunks' cell
                add_cell((k, s, cell_from[k], p - 1, PREFILL, cell_g[k]))
            if gk:  # a readmission's first pass recomputes; the cell that follows generates
                add_cell((k, s, p - 1, p, RECOMPUTE, gk))
                state[k], cell_from[k], cell_g[k] = GENERATING, p, gk + 1
            else:
                state[k], cell_from[k], cell_g[k] = GENERATING, p - 1, 0
        self.count, self.ctx_base = count, ctx_base
