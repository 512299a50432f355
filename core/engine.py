"""One scheduler for every policy on either clock: it asks the KV block manager who fits, and jumps between events.

Each boundary between passes runs, in order: arrivals join the queue; finished requests retire (their slot and
blocks freed); under a limited paged pool, running requests that need a new block take one, preempting the most
recently admitted when none is free; then the policy admits (continuous: first come, first served into the lowest
free slot while the head fits; static: a whole batch whose dense rectangle fits). Between events nothing changes
but the token counts, so a stretch of identical decode passes is run (or costed) as one. The semantics are
DESIGN.md's "Memory"; with unlimited memory the schedules are today's, bit for bit (tests/test_memory.py).
"""

from __future__ import annotations

import heapq
import math
from collections import deque
from collections.abc import Sequence
from dataclasses import dataclass, field
from functools import cached_property

import numpy as np

from .cost import StepCost, UnitCost
from .limits import MAX_DRAIN_STEPS, MAX_SLOTS, LimitError, check_workload
from .memory import UNLIMITED, KVPool, MemoryConfig
from .policies import get_policy
from .request import Request
from .timed import _pass_ms

# Cell states: what a slot does in a pass. G and P as today; R: a preempted request's readmission pass (its prompt
# and earlier tokens recomputed, then its next token); F: a prompt chunk that yields no token yet.
IDLE, GENERATING, PADDING, RECOMPUTE, PREFILL = 0, 1, 2, 3, 4
STATE_CHARS = ".GPRF"
MAX_RECORDED_BLOCKS = 1024


@dataclass(frozen=True)
class Event:
    """A memory decision at a boundary: a request preempted (with its tokens to recompute) or a head blocked."""

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
    policy: str
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


def _validate(slots, policy, batch_timeout, token_budget, memory):
    if not isinstance(slots, (int, np.integer)) or not 1 <= slots <= MAX_SLOTS:
        raise ValueError(f"slots must be an integer in 1..{MAX_SLOTS}, got {slots!r}")
    if not isinstance(memory, MemoryConfig):
        raise TypeError("memory must be a MemoryConfig")
    if not 0 <= batch_timeout <= MAX_DRAIN_STEPS:
        raise ValueError(f"batch_timeout must be a finite number >= 0, got {batch_timeout!r}")
    if batch_timeout and not policy.has_timeout:
        raise ValueError(f"batch_timeout applies to static batching only, not {policy.name}")
    if policy.token_budget:
        if type(token_budget) is not int or not slots <= token_budget <= 10_000_000:
            raise ValueError(
                f"the chunked policy needs token_budget, an integer in {slots:,}..10,000,000 (at least the slots, "
                f"so every decoding row fits in a pass), got {token_budget!r}"
            )
    elif token_budget is not None:
        raise ValueError(f"token_budget applies to the chunked policy only, not {policy.name}")


def check_fits(requests: Sequence[Request], memory: MemoryConfig, policy: str = "continuous") -> None:
    """Refuse, before anything runs, a request that could never fit the pool, naming it and both sizes."""
    if memory.unlimited:
        return
    reserve = memory.reserve_tokens
    longest = max((r.output_tokens for r in requests), default=1)
    reserving = memory.allocation == "contiguous" or policy == "static"
    if reserving and reserve is not None and reserve < longest:
        raise LimitError(
            f"reserve_tokens {reserve:,} is below the longest output in the traffic ({longest:,} tokens): a "
            "contiguous reservation or a static row cannot grow; reserve at least that"
        )
    pool = memory.kv_blocks
    for r in requests:
        tokens = max(1, r.prompt_tokens) + ((reserve or longest) if reserving else r.output_tokens)
        need = memory.blocks_for(tokens)
        if need > pool:
            what = "its reservation" if reserving else "its prompt and output"
            raise LimitError(
                f"request {r.id!r} needs {need:,} blocks of {memory.block_size} tokens for {what} ({tokens:,} tokens) "
                f"but the pool has {pool:,}: give --kv-blocks at least {need:,}"
            )


def schedule(
    requests: Sequence[Request],
    slots: int,
    policy: str = "continuous",
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
    check_fits(requests, memory, policy)
    engine = _Engine(requests, slots, pol, memory, cost, float(batch_timeout), token_budget)
    engine.record_pool = record_pool
    return engine.run()


class _Engine:
    """The loop's state; one instance per schedule."""

    def __init__(self, requests, slots, pol, memory, cost, timeout, budget):
        self.requests, self.slots, self.pol, self.memory = requests, slots, pol, memory
        self.cost, self.timeout, self.budget = cost, timeout, budget
        self.unit = cost is None or isinstance(cost, UnitCost)
        if not self.unit:
            self.step_ms = _pass_ms(cost)
        n = len(requests)
        self.order = sorted(range(n), key=lambda i: requests[i].arrival)  # FCFS; stable keeps trace order on ties
        self.A = [requests[i].arrival for i in self.order]
        self.P = [max(1, requests[i].prompt_tokens) for i in self.order]
        self.OUT = [requests[i].output_tokens for i in self.order]
        self.reserve = memory.reserve_tokens or max(self.OUT, default=1)
        self.pool = KVPool(memory)
        self.limited = not memory.unlimited
        self.paged_growth = self.limited and memory.allocation == "paged" and pol.between_passes
        self.g = [0] * n  # tokens emitted (decoding: recomputed from base at each event)
        self.base = [0] * n  # decoding: tokens emitted before pass q are q + base
        self.gen = [0] * n  # invalidates a request's heap entries when it is preempted
        self.adm = [0] * n  # when each running request was (last) admitted
        self.slot = [0] * n
        self.start = [-1] * n
        self.first = [-1] * n
        self.finish = [0] * n
        self.release = [0] * n
        self.cur = [None] * n  # the open cell: [state, from pass, slot, tokens emitted at its start]
        self.cells: list[tuple[int, int, int, int, int, int]] = []
        self.events: list[Event] = []
        self.recomputed = 0
        self.record_pool = False
        self.maps: list[tuple[int, ...]] = []

    # -- cells ---------------------------------------------------------------------------------------------------
    def _set(self, k: int, state: int, p: int, g0: int) -> None:
        cur = self.cur[k]
        if cur is not None and cur[0] == state and cur[2] == self.slot[k]:
            return
        self._close(k, p)
        self.cur[k] = [state, p, self.slot[k], g0]

    def _close(self, k: int, p: int) -> None:
        cur = self.cur[k]
        if cur is not None and p > cur[1]:
            self.cells.append((k, cur[2], cur[1], p, cur[0], cur[3]))
        self.cur[k] = None

    # -- the loop --------------------------------------------------------------------------------------------------
    def run(self) -> Schedule:
        if self.pol.between_passes:
            self._continuous()
        else:
            self._static()
        return self._record()

    def _stretch(self, p, L, rows, prefill, ctx0, dctx, clock):
        """Run L passes from pass p whose rows are fixed and whose context grows by dctx; return their ends."""
        if self.unit:
            ends = None
            end = clock + L
        elif L == 1:
            end = clock + self.step_ms(rows, prefill, ctx0)
            ends = None
        else:
            age = np.arange(L, dtype=np.int64)
            costs = np.array(
                np.broadcast_to(self.cost.pass_ms(np.full(L, rows), np.full(L, prefill), ctx0 + dctx * age), (L,)),
                dtype=float,
            )
            costs[0] += clock  # ((clock + c0) + c1) + ...: the order one-pass-at-a-time adds them, bit for bit
            ends = np.cumsum(costs)
            end = float(ends[-1])
        self.st.append((p, L, rows, prefill, ctx0, dctx, clock, ends, self.pool.used, self.pool.largest_free_run()))
        if self.record_pool:
            owners = tuple(self.order[o] if o >= 0 else -1 for o in self.pool.owners())
            self.maps.extend([owners] * L)
        return end, ends

    def _continuous(self):
        n, A, P, OUT, pool = len(self.A), self.A, self.P, self.OUT, self.pool
        chunked = self.pol.token_budget
        self.st = []
        waiting: deque[int] = deque()
        free = list(range(self.slots))
        running: dict[int, None] = {}  # admission order: the last key is the most recently admitted
        prefilling: dict[int, list[int]] = {}  # request -> [prefilled, target]
        fin: list[tuple[int, int, int, int]] = []  # (finish pass, slot, request, gen)
        grow: list[tuple[int, int, int]] = []  # (pass it needs its next block, request, gen)
        count = 0  # decoding requests
        ctx_base = 0  # sum over decoding of (P + base): their context at pass q is ctx_base + count * q
        nxt, p, clock = 0, 0, 0.0
        noted: set[int] = set()
        admissions = 0  # admission order, readmissions included: growth is served oldest first

        def start_decoding(k: int, q: int) -> None:
            nonlocal count, ctx_base
            self.base[k] = self.g[k] - q
            count += 1
            ctx_base += P[k] + self.base[k]
            heapq.heappush(fin, (OUT[k] - self.base[k], self.slot[k], k, self.gen[k]))
            if self.paged_growth:
                heapq.heappush(grow, (pool.held[k] * pool.block_size - P[k] - self.base[k], k, self.gen[k]))

        def leave(k: int, q: int) -> None:
            nonlocal count, ctx_base
            if k in prefilling:
                del prefilling[k]
            else:
                self.g[k] = q + self.base[k]
                count -= 1
                ctx_base -= P[k] + self.base[k]
            del running[k]
            pool.release(k)
            heapq.heappush(free, self.slot[k])
            self.gen[k] += 1
            self._close(k, q)

        while True:
            while nxt < n and A[nxt] <= clock:
                waiting.append(nxt)
                nxt += 1
            while fin and fin[0][0] <= p:  # retire
                _, s, k, gn = heapq.heappop(fin)
                if gn != self.gen[k]:
                    continue
                self.finish[k] = self.release[k] = p
                leave(k, p)
            preempted = False
            if self.paged_growth:
                due = []
                while grow and grow[0][0] <= p:
                    _, k, gn = heapq.heappop(grow)
                    if gn == self.gen[k] and k in running:
                        due.append(k)
                if len(due) > 1:
                    due.sort(key=self.adm.__getitem__)  # oldest admitted first
                for k in due:
                    if k not in running:
                        continue
                    tokens = P[k] + p + self.base[k] + 1
                    while not pool.can_append(k, tokens):
                        victim = next(reversed(running))
                        slot_left = self.slot[victim]
                        leave(victim, p)
                        waiting.appendleft(victim)
                        self.events.append(
                            Event(p, "preempt", self.order[victim], slot_left, self.g[victim], pool.free, self.order[k])
                        )
                        preempted = True
                        if victim == k:
                            break
                    if k in running:
                        pool.append(k, tokens)
                        heapq.heappush(grow, (pool.held[k] * pool.block_size - P[k] - self.base[k], k, self.gen[k]))
            # The pass's plan: decoding rows first, then prompt chunks in admission order (chunked), then admissions.
            left = self.budget - count if chunked else None
            chunks: list[tuple[int, int]] = []  # (request, tokens this pass)
            for k, (done_, target) in prefilling.items():
                c = min(target - done_, left)
                left -= c
                chunks.append((k, c))
            while not preempted and waiting and free and (left is None or left > 0):
                k = waiting[0]
                tokens = P[k] + (self.reserve if pool.contiguous else self.g[k] + 1)
                if not pool.can_allocate(k, tokens):
                    if k not in noted:
                        noted.add(k)
                        self.events.append(
                            Event(p, "blocked", self.order[k], free[0], self.memory.blocks_for(tokens), pool.free)
                        )
                    break
                waiting.popleft()
                noted.discard(k)
                pool.allocate(k, tokens)
                self.slot[k] = heapq.heappop(free)
                running[k] = None
                self.adm[k] = admissions
                admissions += 1
                if self.start[k] < 0:
                    self.start[k] = p
                self.recomputed += self.g[k]
                target = P[k] + self.g[k]
                c = target if left is None else min(target, left)
                if left is not None:
                    left -= c
                prefilling[k] = [0, target]
                chunks.append((k, c))
            if not running:
                if nxt == n and not waiting:
                    break
                if waiting:  # check_fits makes an empty pool fit any head, and an idle pass has budget
                    raise RuntimeError("nothing runs but a request waits: the scheduler is stuck")
                clock = max(clock, float(A[nxt]))  # nothing runs till the next arrival
                continue
            if chunks:  # one pass: somebody's prompt is in it
                prefill = sum(c for _, c in chunks)
                ctx = ctx_base + count * p + sum(prefilling[k][0] for k, _ in chunks)
                clock, _ = self._stretch(p, 1, count, prefill, ctx, 0, clock)
                for k, c in chunks:
                    state = prefilling[k]
                    state[0] += c
                    if state[0] < state[1]:
                        self._set(k, PREFILL, p, self.g[k])
                        continue
                    del prefilling[k]
                    self._set(k, RECOMPUTE if self.g[k] else GENERATING, p, self.g[k])
                    if self.first[k] < 0:
                        self.first[k] = p
                    self.g[k] += 1
                    start_decoding(k, p + 1)
                    self._set(k, GENERATING, p + 1, self.g[k])  # a no-op after a G pass: the cell runs on
                p += 1
                continue
            while fin and fin[0][3] != self.gen[fin[0][2]]:
                heapq.heappop(fin)
            while grow and grow[0][2] != self.gen[grow[0][1]]:
                heapq.heappop(grow)
            L = 1 if preempted else fin[0][0] - p  # after a preemption, admission is tried at the next boundary
            if grow:
                L = min(L, max(1, grow[0][0] - p))
            cut = free and not waiting and nxt < n  # an arrival would be admitted at the first pass after it
            if cut and self.unit:
                L = min(L, max(1, math.ceil(A[nxt] - clock)))
            end, ends = self._stretch(p, L, count, 0, ctx_base + count * p, count, clock)
            if cut and not self.unit and L > 1:
                j = int(np.searchsorted(ends, A[nxt], side="left")) + 1
                if j < L:  # cut the stretch where the arrival is first seen
                    self.st[-1] = self.st[-1][:1] + (j,) + self.st[-1][2:7] + (ends[:j],) + self.st[-1][8:]
                    if self.record_pool:
                        del self.maps[len(self.maps) - (L - j) :]
                    L, end = j, float(ends[j - 1])
            clock = end
            p += L
        self.passes = p

    def _static(self):
        n, A, P, OUT, pool = len(self.A), self.A, self.P, self.OUT, self.pool
        self.st = []
        k, p, clock = 0, 0, 0.0
        while k < n:
            oldest = A[k]
            full_at = A[k + self.slots - 1] if k + self.slots - 1 < n else float("inf")
            ready = max(clock, oldest, min(full_at, oldest + self.timeout, A[-1]))
            clock = float(ready)
            size = 0
            while size < self.slots and k + size < n and A[k + size] <= clock:
                size += 1
            if self.limited:  # the dense rectangle: every row holds the widest prompt plus the reservation
                while size > 1 and size * self.memory.blocks_for(max(P[k : k + size]) + self.reserve) > pool.size:
                    size -= 1
            members = range(k, k + size)
            width = max(P[j] for j in members)
            length = max(OUT[j] for j in members)
            for row, j in enumerate(members):
                self.slot[j], self.start[j], self.first[j] = row, p, p
                self.finish[j], self.release[j] = p + OUT[j], p + length
                self.cells.append((j, row, p, p + OUT[j], GENERATING, 0))
                if OUT[j] < length:
                    self.cells.append((j, row, p + OUT[j], p + length, PADDING, OUT[j]))
                pool.allocate(j, width + self.reserve)
            clock, _ = self._stretch(p, 1, 0, size * width, 0, 0, clock)
            if length > 1:
                clock, _ = self._stretch(p + 1, length - 1, size, 0, size * (width + 1), size, clock)
            for j in members:
                pool.release(j)
            p += length
            k += size
        self.passes = p

    def _record(self) -> Schedule:
        n, P, passes = len(self.A), self.P, self.passes
        st = self.st
        lengths = np.array([s[1] for s in st], dtype=np.int64)
        col = lambda i, kind=np.int64: np.repeat(np.array([s[i] for s in st], dtype=kind), lengths)  # noqa: E731
        first_of = np.repeat(np.array([s[0] for s in st], dtype=np.int64), lengths)
        age = np.arange(passes, dtype=np.int64) - first_of
        rows, prefill = col(2), col(3)
        context = col(4) + col(5) * age
        begun = col(6, float)
        if self.unit:
            starts = begun + age
            ends = starts + 1.0
        else:
            ends = np.empty(passes)
            at = 0
            for s in st:
                if s[7] is None:  # one pass, costed by the scalar function as the loop did
                    ends[at] = s[6] + self.step_ms(s[2], s[3], s[4])
                else:
                    ends[at : at + s[1]] = s[7]
                at += s[1]
            starts = np.concatenate(([0.0], ends[:-1])) if passes else np.zeros(0)
            opens = age == 0  # a stretch's first pass starts where the clock stood (after an idle jump, say)
            starts[opens] = begun[opens]
        blocks, largest = col(8), col(9)
        for k in range(n):
            self._close(k, self.finish[k])
        cells = np.array(self.cells, dtype=np.int64).reshape(-1, 6)
        token_blocks = np.zeros(passes, dtype=np.int64)
        if self.limited and len(cells):  # what each generating cell holds: its prompt and tokens so far, plus one
            live = cells[(cells[:, 4] != PADDING)]
            span = live[:, 3] - live[:, 2]
            q = np.repeat(live[:, 2], span) + (np.arange(span.sum()) - np.repeat(np.cumsum(span) - span, span))
            tokens = np.repeat(np.array(P)[live[:, 0]] + live[:, 5] - live[:, 2], span) + q + 1
            np.add.at(token_blocks, q, -(-tokens // self.memory.block_size))
        back = np.empty(n, dtype=np.int64)
        back[self.order] = np.arange(n)
        per = lambda xs: np.array(xs, dtype=np.int64)[back] if n else np.zeros(0, np.int64)  # noqa: E731
        out_cells = cells[:, :5].copy()
        out_cells[:, 0] = np.array(self.order, dtype=np.int64)[cells[:, 0]] if len(cells) else cells[:, 0]
        return Schedule(
            requests=self.requests,
            slots=self.slots,
            policy=self.pol.name,
            memory=self.memory,
            batch_timeout=self.timeout,
            token_budget=self.budget,
            cost="unit" if self.unit else self.cost.name,
            slot=per(self.slot),
            start_pass=per(self.start),
            first_pass=per(self.first),
            finish_pass=per(self.finish),
            release_pass=per(self.release),
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


def as_run(s: Schedule):
    """Return a step-clock schedule as the `Run` every view draws: times are steps, cells carry R and F."""
    from .run import Run

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


def as_timed(s: Schedule):
    """Return a clocked schedule as the `TimedRun` the clock views and timed metrics read."""
    from .timed import TimedRun

    return TimedRun(
        s.requests,
        s.slots,
        s.policy,
        s.batch_timeout,
        s.cost,
        s.slot,
        s.start_pass,
        s.finish_pass,
        s.release_pass,
        s.pass_start,
        s.pass_end,
        s.pass_rows,
        s.pass_prefill,
        s.pass_context,
        first_pass=s.first_pass,
        schedule=s,
    )


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


def memory_waits(s: Schedule) -> list[Wait]:
    """Return every step a request waited for memory with a slot empty (needs `record_pool`; step clock).

    Continuous: from a head's first blocked boundary until it starts, each step with an empty slot. Static: each step
    of a batch cut short by its rectangle (fewer rows than slots while others waited), per empty slot.
    """
    if s.pool_maps is None or s.cost != "unit":
        raise ValueError("memory_waits needs a step-clock schedule with record_pool=True")
    run = as_run(s)
    grid = run.grid(run.drain)
    at = {int(start): p for p, start in enumerate(s.pass_start.tolist())}
    out = []

    def pool_at(t: int) -> tuple[int, int]:
        owners = s.pool_maps[at[t]]
        best = here = 0
        for o in owners:
            here = here + 1 if o < 0 else 0
            best = max(best, here)
        return sum(1 for o in owners if o < 0), best

    if s.policy == "static":
        starts = sorted(set(int(x) for x in run.start.tolist()))
        for t0 in starts:
            members = [i for i in range(len(s.requests)) if run.start[i] == t0]
            end = max(int(run.release[i]) for i in members)
            waiting = [i for i in range(len(s.requests)) if run.arrival[i] <= t0 < run.start[i]]
            if len(members) == s.slots or not waiting:
                continue
            row = s.memory.blocks_for(
                max(max(1, s.requests[i].prompt_tokens) for i in members + waiting[:1])
                + (s.memory.reserve_tokens or max(r.output_tokens for r in s.requests))
            )
            for t in range(t0, end):
                free, longest = pool_at(t)
                for slot in range(len(members), s.slots):
                    out.append(Wait(t, slot, waiting[0], row, free, longest))
        return out
    blocked = sorted((int(s.pass_start[e.step]), e.request, e.tokens) for e in s.events if e.kind == "blocked")
    for t0, request, needed in blocked:
        begun = [lo for i, _, lo, _, _ in (run.cells.tolist() if run.cells is not None else []) if i == request]
        t1 = min((lo for lo in begun if lo >= t0), default=run.drain)
        for t in range(t0, t1):
            idle = [slot for slot in range(s.slots) if grid[slot, t] == 0]
            if idle and t in at:
                free, longest = pool_at(t)
                out.append(Wait(t, idle[0], request, needed, free, longest))
    # One request per step: a later head (after a preemption put another in front) replaces an earlier one.
    latest: dict[int, Wait] = {}
    for w in out:
        latest[w.step] = w
    return [latest[t] for t in sorted(latest)]
