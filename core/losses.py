"""Where a run's slot-time goes: padding, empty slots while requests wait, spare capacity, and the boundary wait."""

from __future__ import annotations

from dataclasses import asdict, dataclass

import numpy as np

from .run import IDLE, PADDING, Run


@dataclass(frozen=True)
class Losses:
    """Counts over steps [0, window); under continuous batching `idle_while_waiting` and `boundary_wait` are 0."""

    window: int
    padding: int  # slot-steps computed for a finished request that still holds its slot
    idle_while_waiting: int  # empty slot-steps at steps where a request had arrived and was waiting
    spare: int  # empty slot-steps with nobody waiting: capacity the traffic did not ask for
    boundary_wait: int  # request-steps waited while some slot was empty or padding (it could have served them)

    @property
    def lost(self) -> int:
        """Return the slot-steps the scheduler lost: padding plus slots left empty while someone waited."""
        return self.padding + self.idle_while_waiting

    def as_dict(self) -> dict:
        """Return the counts as a plain JSON-ready dict."""
        return asdict(self)


def waiting_per_step(run: Run, window: int) -> np.ndarray:
    """Return how many requests had arrived but not started at each step of [0, window)."""
    diff = np.zeros(window + 1, dtype=np.int64)
    np.add.at(diff, np.minimum(run.arrival, window), 1)
    np.add.at(diff, np.minimum(run.start, window), -1)
    return np.cumsum(diff)[:window]


def losses(run: Run, window: int | None = None) -> Losses:
    """Return where the run's slot-steps in [0, window) went (the window defaults to the drain)."""
    window = run.drain if window is None else int(window)
    counts = run.counts_per_step(window)  # per step, not per slot-step: no dense grid for a long drain
    empty = counts[IDLE]
    could_serve = empty + counts[PADDING]
    waiting = waiting_per_step(run, window)
    someone_waits = waiting > 0
    return Losses(
        window=window,
        padding=int(counts[PADDING].sum()),
        idle_while_waiting=int(empty[someone_waits].sum()),
        spare=int(empty[~someone_waits].sum()),
        boundary_wait=int(waiting[could_serve > 0].sum()),
    )
