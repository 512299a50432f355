"""The `Run` record a scheduler returns: per-request start/finish/slot, the slot timeline and the decision log."""

from __future__ import annotations

from dataclasses import dataclass, field
from functools import cached_property

import numpy as np

from core.limits import check_cells, check_steps
from core.sched.policies import Policy, carry_policy
from core.sched.waits import memory_waits
from core.states import GENERATING, IDLE, PADDING, PREFILL, RECOMPUTE, STATE_CHARS
from core.workload.request import Request

__all__ = ["GENERATING", "IDLE", "PADDING", "PREFILL", "RECOMPUTE", "STATE_CHARS", "Decision", "Run"]


@dataclass(frozen=True)
class Decision:
    """One scheduler decision taken before a step: a request finished, was admitted, or its slot released."""

    step: int
    kind: str  # "finish" | "release" | "preempt" | "admit" | "wait" (the last two only under a limited KV pool)
    request: int  # index into Run.requests
    slot: int
    # Memory's decisions only. preempt: `tokens` generated tokens to recompute, `other` the request that needed the
    # block. wait: `tokens` blocks needed, `free` free blocks, `longest` the longest run of free blocks.
    tokens: int = 0
    other: int = -1
    free: int = 0
    longest: int = 0


@dataclass(frozen=True, eq=False)
class Run:
    """A finished schedule. Arrays hold one entry per request, in the order the requests were given."""

    requests: tuple[Request, ...]
    slots: int
    policy: str  # its name (given the object, the name; the object is `rules`)
    batch_timeout: int
    start: np.ndarray
    finish: np.ndarray  # exclusive: the request generates in steps start … finish-1
    slot: np.ndarray
    release: np.ndarray  # step its slot becomes free (= finish, or the batch end under static)
    # Set by the memory-aware engine (`sched.engine`): every drawn interval as (request, slot, from, to, state), when
    # a request's steps are not one interval (preempted, or prefilled in chunks); its memory events; its schedule.
    cells: np.ndarray | None = None
    schedule: object = None
    rules: Policy | None = field(default=None, repr=False)  # the policy object that made it (set from `policy`)

    def __post_init__(self):
        carry_policy(self)

    @property
    def drain(self) -> int:
        """Return the step at which the last request finishes (0 for no requests)."""
        return int(self.finish.max()) if len(self.finish) else 0

    @cached_property
    def arrival(self) -> np.ndarray:
        """Return the arrival step of every request."""
        return np.array([r.arrival for r in self.requests], dtype=np.int64)

    @property
    def timeline(self) -> np.ndarray:
        """Return the (slots, drain) uint8 state grid (refused past MAX_TIMELINE_CELLS: use `grid(window)`)."""
        return self.grid(self.drain)

    def grid(self, width: int) -> np.ndarray:
        """Return the state grid over exactly `width` steps: cut at the window, or idle past the drain.

        Only the cells asked for are built, so a short window of a very long run costs what the window costs.
        """
        check_cells(self.slots, width)
        if self.cells is not None:
            return self._grid_from_cells(width)
        # Difference arrays over the window only: +1 where an interval opens, -1 where it closes. A slot holds one
        # request at a time, so the running sums stay 0 or 1 and int8 is enough.
        edges = np.zeros((2, self.slots, width + 1), dtype=np.int8)
        clip = lambda steps: np.minimum(steps, width)  # noqa: E731
        start, finish, release = clip(self.start), clip(self.finish), clip(self.release)
        np.add.at(edges[0], (self.slot, start), 1)
        np.add.at(edges[0], (self.slot, finish), -1)
        np.add.at(edges[1], (self.slot, finish), 1)
        np.add.at(edges[1], (self.slot, release), -1)
        open_ = np.cumsum(edges, axis=2, dtype=np.int8)[:, :, :width] > 0
        grid = np.zeros((self.slots, width), dtype=np.uint8)
        grid[open_[1]] = PADDING
        grid[open_[0]] = GENERATING
        return grid

    def counts_per_step(self, width: int) -> np.ndarray:
        """Return how many slots are in each state at each step of [0, width): a (5, width) array, states as rows.

        Built from the intervals with difference arrays, so it costs one number per step and state, not one per
        slot-step: a long drain on many slots is counted without its dense grid.
        """
        check_steps(width, "the per-step counts")
        if self.cells is not None:
            cells = self.cells
            spans = [(cells[cells[:, 4] == s, 2], cells[cells[:, 4] == s, 3]) for s in range(1, len(STATE_CHARS))]
        else:
            spans = [(self.start, self.finish), (self.finish, self.release), ((), ()), ((), ())]
        out = np.zeros((len(STATE_CHARS), width), dtype=np.int64)
        for state, (lo, hi) in enumerate(spans, start=1):
            diff = np.zeros(width + 1, dtype=np.int64)
            np.add.at(diff, np.minimum(np.asarray(lo, dtype=np.int64), width), 1)
            np.add.at(diff, np.minimum(np.asarray(hi, dtype=np.int64), width), -1)
            out[state] = np.cumsum(diff)[:width]
        out[IDLE] = self.slots - out[1:].sum(axis=0)
        return out

    def _grid_from_cells(self, width: int) -> np.ndarray:
        grid = np.zeros((self.slots, width), dtype=np.uint8)
        for _, slot, lo, hi, state in self.cells[self.cells[:, 2] < width].tolist():
            grid[slot, lo : min(hi, width)] = state
        return grid

    def timeline_strings(self, width: int | None = None) -> list[str]:
        """Return one string per slot, one character (G, P or .) per step, over `width` steps (default: drain)."""
        grid = self.grid(self.drain if width is None else width)
        chars = np.frombuffer(STATE_CHARS.encode(), dtype=np.uint8)[grid]
        return [row.tobytes().decode() for row in chars]

    @cached_property
    def stays(self) -> np.ndarray:
        """Return every stay in a slot as rows (request, slot, start, finish, release), by request then start.

        One per request, unless the memory engine preempted it: then one per admission, the earlier ones ending at
        their preemption. A stay runs from start to finish and pads until release.
        """
        n = len(self.requests)
        if self.cells is None:
            return np.stack([np.arange(n), self.slot, self.start, self.finish, self.release], axis=1).astype(np.int64)
        rows: list[list[int]] = []
        for i, slot, lo, hi, state in sorted(self.cells[:, :5].tolist(), key=lambda c: (c[0], c[2])):
            last = rows[-1] if rows and rows[-1][0] == i else None
            if state == PADDING and last is not None:
                last[4] = hi
            elif last is not None and last[1] == slot and last[3] == lo:  # the same stay: recompute, then tokens
                last[3] = last[4] = hi
            else:
                rows.append([i, slot, lo, hi, hi])
        return np.array(rows, dtype=np.int64).reshape(-1, 5)

    @cached_property
    def log(self) -> list[Decision]:
        """Return every decision, by step, then finishes, releases, preemptions, admissions and waits, then slot."""
        order = {"finish": 0, "release": 1, "preempt": 2, "admit": 3, "wait": 4}
        preempts = self._preemptions()
        items = []
        stays = self.stays.tolist()
        for k, (i, slot, lo, hi, release) in enumerate(stays):
            items.append(Decision(lo, "admit", i, slot))
            if k + 1 < len(stays) and stays[k + 1][0] == i:  # a later stay follows: this one ended in a preemption
                tokens, other = preempts[i].pop(0) if preempts.get(i) else (0, -1)
                items.append(Decision(hi, "preempt", i, slot, tokens, other))
                continue
            items.append(Decision(hi, "finish", i, slot))
            if release > hi:
                items.append(Decision(release, "release", i, slot))
        items += self._memory_waits()
        items.sort(key=lambda d: (d.step, order[d.kind], d.slot))
        return items

    def _preemptions(self) -> dict[int, list[tuple[int, int]]]:
        """Return per request its preemptions in order, as (tokens to recompute, the request needing the block)."""
        out: dict[int, list[tuple[int, int]]] = {}
        for e in getattr(self.schedule, "events", ()):
            if e.kind == "preempt":
                out.setdefault(e.request, []).append((e.tokens, e.needed_by))
        return out

    @cached_property
    def memory_waits(self) -> list:
        """Return the engine's waits for memory (core.sched.waits) on a recorded pool, else none."""
        s = self.schedule
        if s is None or getattr(s, "pool_maps", None) is None or s.cost != "unit":
            return []
        return memory_waits(s, self)

    def _memory_waits(self) -> list[Decision]:
        """Return one decision per step a request waited for memory while a slot stood empty (limited pools)."""
        waits = self.memory_waits
        if self.rules.forms_batches:  # said once, when a batch formed short: one more row did not fit the pool
            starts = set(self.start.tolist())
            empty: dict[int, list] = {}
            for w in waits:
                if w.step in starts:
                    empty.setdefault(w.step, []).append(w)
            return [
                Decision(t, "wait", ws[0].request, ws[0].slot, ws[0].needed, self.slots - len(ws) + 1)
                for t, ws in sorted(empty.items())
            ]
        return [Decision(w.step, "wait", w.request, w.slot, w.needed, -1, w.free, w.longest_run) for w in waits]

    @cached_property
    def _log_steps(self) -> np.ndarray:
        return np.array([d.step for d in self.log], dtype=np.int64)

    def describe_step(self, step: int) -> str:
        """Return the step's decisions as one line, e.g. 'step 7: C finished, slot 2 freed; E admitted to slot 2'."""
        lo, hi = np.searchsorted(self._log_steps, [step, step + 1])
        parts = [self._describe(d) for d in self.log[lo:hi]]
        return f"step {step}: " + ("; ".join(parts) if parts else "no change")

    def _describe(self, d: Decision) -> str:
        name = self.requests[d.request].id
        if d.kind == "admit":
            again = self.start[d.request] < d.step  # admitted before: preempted since, its KV to recompute
            if again:
                return f"{name} readmitted to slot {d.slot}, recomputing its KV"
            return f"{name} admitted to slot {d.slot}"
        if d.kind == "release":
            return f"slot {d.slot} released ({name}'s padding ends)"
        if d.kind == "preempt":
            needer = self.requests[d.other].id if d.other >= 0 else "another request"
            tokens = _count(d.tokens, "token")
            return f"no free block for {needer}; {name} preempted from slot {d.slot}, {tokens} to recompute"
        if d.kind == "wait" and d.other >= 0:  # static: `other` rows of `tokens` blocks each would be needed
            pool = self.schedule.memory.kv_blocks
            return (
                f"{name} waits for memory: with it the batch would be {d.other} rows of {_count(d.tokens, 'block')}, "
                f"{d.other * d.tokens} blocks, and the pool holds {pool}"
            )
        if d.kind == "wait":
            why = f", the longest run {d.longest}" if d.free >= d.tokens > d.longest else ""
            return f"{name} waits for memory: needs {_count(d.tokens, 'block')}, {d.free} free{why}"
        if self.release[d.request] > d.step:
            return f"{name} finished, slot {d.slot} now padding"
        return f"{name} finished, slot {d.slot} freed"


def _count(n: int, word: str) -> str:
    return f"{n} {word}" if n == 1 else f"{n} {word}s"
