"""The continuous loop's pass plan and its prompt pass: a pass that holds a prompt (or its chunk), and after.

A pausing policy's decoding rows emit nothing in it (TGI); a prompt whose last chunk was in it decodes from the next
pass. A mixin of `ContinuousLoop` (core/sched/continuous.py), whose state it reads and changes.
"""

from __future__ import annotations

from heapq import heappush

from core.states import GENERATING, PAUSED, PREFILL, RECOMPUTE


class Plan:
    """A pass's plan: what it holds beside the decoding rows (prompt chunks or admissions), and its budget left."""

    __slots__ = ("chunks", "left", "prefill", "prefilled", "preempted")

    def __init__(self):
        self.chunks: list = []  # chunked: (request, tokens this pass); otherwise the requests admitted
        self.left = 0  # chunked: the pass's token budget still free
        self.prefill = 0  # prompt tokens in this pass
        self.prefilled = 0  # their cached prompt before it (context the pass reads)
        self.preempted = False  # a chunk's blocks preempted someone (per-chunk allocation)


class PromptPass:
    """The phase `run_prompt_pass` of the continuous loop, and the steps it takes."""

    def run_prompt_pass(self, plan: Plan) -> None:
        """Run one pass that holds a prompt: a pausing policy's decoding rows wait; finished prompts then decode."""
        count, clock = self.count, self.clock
        paused = self.pauses and count > 0
        if paused:
            self.pause_decoders(set() if self.chunked else set(plan.chunks))
        used, largest = self.pool_fixed or self.pool_now()
        rows_now = 0 if paused else count
        ctx = plan.prefilled + (0 if paused else self.ctx_base + count * self.p)
        if self.quick:
            end = clock + 1
            self.record((1, rows_now, plan.prefill, ctx, clock, end, used, largest))
        else:
            end = self.stretch(1, rows_now, plan.prefill, ctx, clock, used, largest)
        p = self.p + 1
        self.clock, self.p, self.since, self.after_pause = end, p, 0, paused
        # The pass gave each prompt it finished its next token: from pass p that request decodes.
        g, base, P, OUT, gen, slot, fin, plain = self.fixed_start
        ctx_base = self.ctx_base
        for k in self.chunks_done(plan.chunks) if self.chunked else plan.chunks:
            gk, s = g[k], slot[k]
            b = base[k] = gk + 1 - p
            count += 1
            ctx_base += P[k] + b
            heappush(fin, (OUT[k] - b, s, k, gen[k]))
            if not plain:  # its first pass is its start, its cell the assembly's
                self.start_cells(k, s, gk, b)
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
        self.ctx_base -= self.count
        self.fin[:] = [(f + 1, s, k, gn) for f, s, k, gn in self.fin]  # a uniform shift keeps the heap a heap

    def chunks_done(self, chunks: list) -> list[int]:
        """Return the requests whose last prompt chunk was in the pass; the others wait for their next chunk."""
        done = []
        for k, c in chunks:
            state = self.prefilling[k]
            state[0] += c
            if state[0] < state[1]:
                if self.cell_state[k] != PREFILL:
                    self.cell_state[k], self.cell_from[k], self.cell_g[k] = PREFILL, self.p - 1, self.g[k]
                continue
            del self.prefilling[k]
            done.append(k)
        return done

    def start_cells(self, k: int, s: int, gk: int, b: int) -> None:
        """Request k, whose prompt the last pass finished, decodes from now on: its cells and next block say so."""
        p, g, add_cell = self.p, self.g, self.add_cell
        state, cell_from, cell_g = self.cell_state, self.cell_from, self.cell_g
        if self.first[k] < 0:
            self.first[k] = p - 1
        g[k] = gk + 1
        if self.growth:
            ph = self.phase[k] = (self.pool.held[k] * self.bs - self.P[k] - b) % self.bs
            self.buckets[ph][k] = None
        if self.chunked and state[k] == PREFILL and p - 1 > cell_from[k]:  # its earlier chunks' cell
            add_cell((k, s, cell_from[k], p - 1, PREFILL, cell_g[k]))
        if gk:  # a readmission's first pass recomputes; the cell that follows generates
            add_cell((k, s, p - 1, p, RECOMPUTE, gk))
            state[k], cell_from[k], cell_g[k] = GENERATING, p, gk + 1
        else:
            state[k], cell_from[k], cell_g[k] = GENERATING, p - 1, 0
