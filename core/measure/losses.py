"""Where a run's slot-time goes: padding, empty slots while requests wait, spare capacity, and the boundary wait."""

from __future__ import annotations

from dataclasses import asdict, dataclass

import numpy as np

from core.sched.run import PADDING, Run
from core.states import STATE_CHARS


@dataclass(frozen=True)
class Losses:
    """Counts over steps [0, window); under continuous batching `idle_while_waiting` and `boundary_wait` are 0."""

    window: int
    padding: int  # slot-steps computed for a finished request that still holds its slot
    # Empty slot-steps a waiting request could have taken: at each step the fewer of the empty slots and the requests
    # that had arrived and were waiting (14 empty slots beside 10 waiting count 10).
    idle_while_waiting: int
    spare: int  # the other empty slot-steps: capacity nobody waiting could have used
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


def _spans(run: Run) -> list[tuple[np.ndarray, np.ndarray]]:
    """Return, per slot state 1.. (generating, padding, recompute, prefill, paused), its intervals' starts and ends."""
    if run.cells is not None:
        cells = run.cells
        return [(cells[cells[:, 4] == s, 2], cells[cells[:, 4] == s, 3]) for s in range(1, len(STATE_CHARS))]
    empty = np.zeros(0, dtype=np.int64)
    return [(run.start, run.finish), (run.finish, run.release)] + [(empty, empty)] * (len(STATE_CHARS) - 3)


def losses(run: Run, window: int | None = None) -> Losses:
    """Return where the run's slot-steps in [0, window) went (the window defaults to the drain).

    An event sweep over the intervals' ends: between two ends every count is constant, so the cost grows with the
    requests, not with the steps (a trace spanning a billion steps is measured in a moment; Run.counts_per_step
    is the per-step oracle it is tested against).
    """
    window = run.drain if window is None else int(window)
    spans = _spans(run)
    clip = lambda x: np.clip(np.asarray(x, dtype=np.int64), 0, window)  # noqa: E731
    ends = [clip(x) for lo, hi in spans for x in (lo, hi)] + [clip(run.arrival), clip(run.start)]
    edges = np.unique(np.concatenate([np.array([0, window], dtype=np.int64), *ends]))
    lengths = np.diff(edges)  # segment k is steps [edges[k], edges[k + 1])

    def level(starts, stops) -> np.ndarray:  # how many intervals cover each segment
        diff = np.zeros(len(edges), dtype=np.int64)
        np.add.at(diff, np.searchsorted(edges, clip(starts)), 1)
        np.add.at(diff, np.searchsorted(edges, clip(stops)), -1)
        return np.cumsum(diff)[:-1]

    held = [level(lo, hi) for lo, hi in spans]
    empty = run.slots - sum(held)
    padding = held[PADDING - 1]
    waiting = level(run.arrival, run.start)
    usable = np.minimum(empty, waiting)  # empty slots a waiting request could have taken
    return Losses(
        window=window,
        padding=int((padding * lengths).sum()),
        idle_while_waiting=int((usable * lengths).sum()),
        spare=int(((empty - usable) * lengths).sum()),
        boundary_wait=int((waiting * lengths)[(empty + padding) > 0].sum()),
    )
