"""Each measured pass beside what its profile prices it at: where an online prediction's error comes from."""

from __future__ import annotations

import numpy as np

from core.clock.cost import StepCost, prices_rectangles, scalar_pass_ms, wake_of
from core.sched.timed import TimedRun

from .synthetic import SPIN_MS

# A pass that starts more than SPIN_MS after the previous one ended followed a sleep (the online wait spins only its
# last SPIN_MS): that is where the engine's wake shows. Only a newcomer's prompt wakes an idle engine, so a pass that
# only decodes always runs back to back.
KINDS = ("prompt, after a sleep", "prompt, back to back", "decode only")


def priced_passes(run: TimedRun, cost: StepCost) -> tuple[np.ndarray, np.ndarray]:
    """Return (price, gap): each pass of `run` priced as the simulator prices it under `cost`, and the idle before it.

    The price is the profile's cost of the pass's shape, a static batch's prompt pass as the rectangle of its
    members where the profile was timed that way, plus the wake after an idle gap, as `core.sched.timed.CostRunner` adds
    them; so a run the simulator made under `cost` is priced at exactly what its passes took.
    """
    rows = run.pass_rows
    if prices_rectangles(cost):
        members = np.bincount(run.start_pass, minlength=run.passes)  # a batch's members all start in its prompt pass
        rows = np.where(run.pass_prefill > 0, members, rows)
    step, wake = scalar_pass_ms(cost), wake_of(cost)
    price = np.array(
        [step(int(r), int(p), int(c)) for r, p, c in zip(rows, run.pass_prefill, run.pass_context)], dtype=float
    )
    gap = run.pass_start_ms - np.r_[0.0, run.pass_end_ms[:-1]]  # the simulator's clock starts at 0
    if wake is not None:
        price += [wake(float(g)) for g in gap]
    return price, gap


def pass_errors(run: TimedRun, cost: StepCost) -> dict[str, dict]:
    """Return, per kind of pass (KINDS) that the run holds, how many, their measured and priced ms and the ratio.

    A prompt pass holds a newcomer's prompt tokens (and, under continuous batching, the running requests' rows).
    """
    price, gap = priced_passes(run, cost)
    took = run.pass_end_ms - run.pass_start_ms
    prompt, slept = run.pass_prefill > 0, gap > SPIN_MS
    masks = (prompt & slept, prompt & ~slept, ~prompt)
    out = {}
    for kind, mask in zip(KINDS, masks):
        if mask.any():
            measured, priced = float(took[mask].sum()), float(price[mask].sum())
            out[kind] = {"passes": int(mask.sum()), "measured_ms": measured, "priced_ms": priced,
                         "ratio": measured / priced if priced else None}  # fmt: skip
    return out
