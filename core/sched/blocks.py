"""The continuous loop's block phases: growth block by block, preemption, SGLang's retraction, a chunk's blocks.

A mixin of `ContinuousLoop` (core/sched/continuous.py), whose state it reads and changes: `grow_or_preempt` is the
boundary's phase; `take_chunk` is asked by `plan_pass` where a prompt takes its blocks chunk by chunk (vLLM).
"""

from __future__ import annotations

from heapq import heappush

from core.sched.prompt_pass import Plan
from core.sched.schedule_record import Event


class BlockPhases:
    """The phase `grow_or_preempt` of the continuous loop, and the preemptions it and a chunk's blocks make."""

    def grow_or_preempt(self, due: dict[int, None]) -> bool:
        """Give each decoding request due a new block one; where none is free, preempt. Return whether anyone was.

        `due`: the requests whose next token starts a block at this pass (the loop's bucket for it).
        """
        pool, pauses = self.pool, self.pauses
        if pauses:  # a pausing policy's rows that took their block ahead are not due again
            self.grown = ()
            if self.ahead:
                due = {k: None for k in due if k not in self.ahead}
                if not due:
                    return False
        # Enough free blocks and no ids to track: a block for each, nobody preempted, so their order is moot. (The loop
        # asks the pool that itself before it asks this phase, except where rows pause.)
        if pauses and not self.track and pool.try_grow(due):
            if pauses:
                self.grown = list(due)  # (the due are all running)
            return False
        running, preempted = self.running, False
        due = sorted(due, key=self.adm.__getitem__)  # oldest admitted first
        if self.bulk:
            preempted = self.retract(due)
        else:
            served = min(len(due), pool.free)  # these take a free block each, as one by one they would
            pool.grow(due[:served])
            for k in due[served:]:
                if k not in running:  # a victim already
                    continue
                if pool.can_grow(1):  # a victim's blocks came free
                    pool.grow((k,))
                else:
                    preempted = self.preempt_for(k) or preempted
        if pauses:
            self.grown = [k for k in due if k in running]
        return preempted

    def preempt_for(self, k: int, tokens: int = 0) -> bool:
        """Preempt the policy's victims until request k's next block (or `tokens`) fits, or k itself goes.

        Return whether anyone was preempted.
        """
        pool, p, preempted = self.pool, self.p, False
        tokens = tokens or self.P[k] + p + self.base[k] + 1
        while not pool.can_append(k, tokens):
            victim = self.victim()
            slot_left = self.slot[victim]
            self.leave(victim, p)
            self.waiting.appendleft(victim)
            order = self.order
            self.events.append(Event(p, "preempt", order[victim], slot_left, self.g[victim], pool.free, order[k]))
            preempted = True
            if victim == k:
                break
        if k in self.running:
            pool.append(k, tokens)
        return preempted

    def retract(self, due: list[int]) -> bool:
        """Give the due their blocks; where too few are free, retract the policy's victims at once (SGLang).

        The victims leave for the back of the queue and later recompute; the others take their blocks, and the
        estimate's ratio is the retraction's. Return whether anyone was retracted.
        """
        pool, p, base = self.pool, self.p, self.base
        if pool.free >= len(due):
            pool.grow(due)
            return False
        held, wanted = pool.held, set(due)
        fits = lambda victims: pool.free + sum(held[v] for v in victims) >= len(wanted.difference(victims))  # noqa: E731
        victims = self.pol.retraction_victims([(k, p + base[k], self.P[k]) for k in self.running], fits)
        order = self.order
        for v in victims:
            slot_left = self.slot[v]
            self.leave(v, p)
            self.waiting.append(v)
            self.events.append(Event(p, "preempt", order[v], slot_left, self.g[v], pool.free, order[due[0]]))
        pool.grow([k for k in due if k in self.running])
        self.est.retracted([(k, p + base[k]) for k in self.running])
        return bool(victims)

    def victim(self) -> int:
        """Return whom a block shortage preempts: the policy's least wanted, then the most recently admitted."""
        running = self.running
        if self.by_arrival:  # vLLM's priority victim: the latest arrival of the least wanted class
            ranks = self.ranks  # requests are numbered in arrival order
            return max(running, key=lambda j: (ranks[j], j))
        if self.stacks is None:  # one class: the last key of `running` is its most recent admission
            return next(reversed(running))
        # Within a class, the last admission still running: every admission after its own belongs to a request no
        # longer running (else that one would be more recent), so those are popped, each once.
        for rank in self.rank_desc:
            stack = self.stacks[rank]
            while stack and stack[-1] not in running:
                stack.pop()
            if stack:
                return stack[-1]
        raise RuntimeError("a victim was asked for with nobody running")

    def leave(self, k: int, q: int) -> None:
        """Free the slot and blocks of request k, which leaves before pass q (preempted)."""
        self.releases += 1
        if k in self.prefilling:
            del self.prefilling[k]
        else:
            self.g[k] = q + self.base[k]
            self.count -= 1
            self.ctx_base -= self.P[k] + self.base[k]
            if self.growth:
                del self.buckets[self.phase[k]][k]
        del self.running[k]
        self.ahead.discard(k)
        self.pool.release(k)
        s = self.slot[k]
        heappush(self.free, s)
        self.gen[k] += 1
        if q > self.cell_from[k]:
            self.add_cell((k, s, self.cell_from[k], q, self.cell_state[k], self.cell_g[k]))

    def take_chunk(self, k: int, tokens: int, plan: Plan) -> int:
        """Grow request k's blocks to `tokens` for its next chunk, preempting where none is free (vLLM).

        Return the pass's tokens given back by victims already in it (a decoding row's one, a planned chunk's).
        """
        if self.pool.can_append(k, tokens):
            self.pool.append(k, tokens)
            return 0
        rows, planned = self.count, {j: (c, self.prefilling[j][0]) for j, c in plan.chunks}
        plan.preempted = self.preempt_for(k, tokens) or plan.preempted
        back = rows - self.count  # each decoding victim's row
        for j, (c, done) in planned.items():
            if j not in self.prefilling:  # a victim whose chunk was planned: out of the pass
                plan.chunks.remove((j, c))
                plan.prefill -= c
                plan.prefilled -= done
                back += c
        return back
