"""The chapter's worked example: six requests A-F on four slots, with every figure the chapter quotes."""

from __future__ import annotations

from core.measure.losses import losses
from core.sched.run import Run
from core.workload.request import Request

SLOTS = 4
BATCH_TIMEOUT = 1  # static: A-C arrive at 0 and wait one step for D, so the first batch is A-D
# (id, arrival step, output tokens, prompt tokens). Found by solving the chapter's figures under docs/design.md's
# "Simulator semantics": static pads 30 slot-steps, E and F wait 12 and 11 steps, everything is done at step 22;
# continuous leaves 16 slot-steps idle, starts E and F 11 and 10 steps earlier, and is done at step 14.
# The prompt lengths change no schedule; they make each request's first step (its prefill) visible in the ragged batch.
_ROWS = (("A", 0, 14, 6), ("B", 0, 4, 3), ("C", 0, 5, 9), ("D", 1, 5, 4), ("E", 3, 7, 5), ("F", 4, 5, 2))


def worked_example() -> list[Request]:
    """Return the worked example's requests A-F, in arrival order."""
    return [Request(rid, arrival, tokens, prompt) for rid, arrival, tokens, prompt in _ROWS]


WINDOW = 24  # fits static's drain (22) with a little room: A-F fill the plot instead of a third of it


def worked_figures(static: Run, continuous: Run) -> dict[str, int]:
    """Return the chapter's caption figures, as the core's two schedules of A-F give them."""
    ids = [r.id for r in static.requests]
    e, f = ids.index("E"), ids.index("F")
    wait = static.start - static.arrival
    earlier = static.start - continuous.start
    return {
        "static_padding": losses(static).padding,
        "static_wait_e": int(wait[e]),
        "static_wait_f": int(wait[f]),
        "static_drain": static.drain,
        "continuous_idle": losses(continuous).spare + losses(continuous).idle_while_waiting,
        "continuous_earlier_e": int(earlier[e]),
        "continuous_earlier_f": int(earlier[f]),
        "continuous_drain": continuous.drain,
    }
