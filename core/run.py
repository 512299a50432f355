"""The `Run` record a scheduler returns: per-request start/finish/slot, the slot timeline and the decision log."""

from __future__ import annotations

from dataclasses import dataclass
from functools import cached_property

import numpy as np

from .request import Request

IDLE, GENERATING, PADDING = 0, 1, 2
STATE_CHARS = ".GP"
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

    @property
    def drain(self) -> int:
        """Return the step at which the last request finishes (0 for no requests)."""
        return int(self.finish.max()) if len(self.finish) else 0

    @cached_property
    def arrival(self) -> np.ndarray:
        """Return the arrival step of every request."""
        return np.array([r.arrival for r in self.requests], dtype=np.int64)

    @cached_property
    def timeline(self) -> np.ndarray:
        """Return the (slots, drain) uint8 state grid: IDLE, GENERATING or PADDING per slot per step."""
        width = self.drain
        gen = np.zeros((self.slots, width + 1), dtype=np.int32)
        pad = np.zeros((self.slots, width + 1), dtype=np.int32)
        # Difference arrays: +1 where an interval opens, -1 where it closes; one pass per state.
        np.add.at(gen, (self.slot, self.start), 1)
        np.add.at(gen, (self.slot, self.finish), -1)
        np.add.at(pad, (self.slot, self.finish), 1)
        np.add.at(pad, (self.slot, self.release), -1)
        grid = np.zeros((self.slots, width), dtype=np.uint8)
        grid[np.cumsum(pad, axis=1)[:, :width] > 0] = PADDING
        grid[np.cumsum(gen, axis=1)[:, :width] > 0] = GENERATING
        return grid

    def grid(self, width: int) -> np.ndarray:
        """Return the state grid over exactly `width` steps: cut at the window, or idle-padded past the drain."""
        grid = np.zeros((self.slots, width), dtype=np.uint8)
        shown = min(width, self.drain)
        grid[:, :shown] = self.timeline[:, :shown]
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
