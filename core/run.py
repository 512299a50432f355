"""The `Run` record a scheduler returns: per-request start/finish/slot, the slot timeline and the decision log."""

from __future__ import annotations

from dataclasses import dataclass
from functools import cached_property

import numpy as np

from .limits import check_cells
from .request import Request

IDLE, GENERATING, PADDING, RECOMPUTE, PREFILL = 0, 1, 2, 3, 4
STATE_CHARS = ".GPRF"  # R: a preempted request's readmission pass; F: a prompt chunk that yields no token yet
POLICIES = ("static", "continuous")


@dataclass(frozen=True)
class Decision:
    """One scheduler decision taken before a step: a request finished, was admitted, or its slot released."""

    step: int
    kind: str  # "finish" | "admit" | "release"
    request: int  # index into Run.requests
    slot: int


@dataclass(frozen=True, eq=False)
class Run:
    """A finished schedule. Arrays hold one entry per request, in the order the requests were given."""

    requests: tuple[Request, ...]
    slots: int
    policy: str
    batch_timeout: int
    start: np.ndarray
    finish: np.ndarray  # exclusive: the request generates in steps start … finish-1
    slot: np.ndarray
    release: np.ndarray  # step its slot becomes free (= finish, or the batch end under static)
    # Set by the memory-aware engine (`core.engine`): every drawn interval as (request, slot, from, to, state), when
    # a request's steps are not one interval (preempted, or prefilled in chunks); its memory events; its schedule.
    cells: np.ndarray | None = None
    schedule: object = None

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
    def log(self) -> list[Decision]:
        """Return every decision, ordered by step, then finishes, releases and admissions, then slot."""
        order = {"finish": 0, "release": 1, "admit": 2}
        items = []
        for i in range(len(self.requests)):
            slot = int(self.slot[i])
            items.append(Decision(int(self.finish[i]), "finish", i, slot))
            if self.release[i] > self.finish[i]:
                items.append(Decision(int(self.release[i]), "release", i, slot))
            items.append(Decision(int(self.start[i]), "admit", i, slot))
        items.sort(key=lambda d: (d.step, order[d.kind], d.slot))
        return items

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
            return f"{name} admitted to slot {d.slot}"
        if d.kind == "release":
            return f"slot {d.slot} released ({name}'s padding ends)"
        if self.release[d.request] > d.step:
            return f"{name} finished, slot {d.slot} now padding"
        return f"{name} finished, slot {d.slot} freed"
