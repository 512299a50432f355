"""Simulation on a clock: each forward pass lasts what a cost model says for what it holds; arrivals in milliseconds.

The rules are the policies' (`core.sched.policies`), the same objects the step clock asks. What changes is time: a
scheduler sees an arrival only once the clock has passed it, and a pass over 64 rows takes longer than a pass over 4.
When nothing can run the clock jumps to the next event. Under `UnitCost` every time equals the step simulator's step
number exactly (tested).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from functools import cached_property
from typing import Protocol

import numpy as np

from core.clock.cost import StepCost, prices_rectangles, scalar_pass_ms, wake_of
from core.kv.memory import UNLIMITED
from core.limits import MAX_SLOTS, check_workload
from core.sched.engine import schedule
from core.sched.fast_loops import fast_loop_for
from core.sched.policies import REGISTRY, Policy, carry_policy, get_policy
from core.sched.schedule_record import Schedule
from core.states import GENERATING, RECOMPUTE
from core.stats import weighted_percentiles
from core.workload.request import Request


@dataclass(frozen=True, eq=False)
class TimedRun:
    """A schedule on a clock. Per request: times in ms and pass indices; per pass: its start, size and work."""

    requests: tuple[Request, ...]
    slots: int
    policy: str
    batch_timeout_ms: float
    cost: str
    slot: np.ndarray
    start_pass: np.ndarray  # the request's first pass (its prefill)
    finish_pass: np.ndarray  # exclusive: its last token comes out of pass finish_pass - 1
    release_pass: np.ndarray  # static: the pass its batch ends; continuous: finish_pass
    pass_start_ms: np.ndarray  # pass p runs over [pass_start_ms[p], pass_end_ms[p]); idle gaps lie between passes
    pass_end_ms: np.ndarray
    pass_rows: np.ndarray  # decoding rows computed in each pass (static: every member, padding included)
    pass_prefill: np.ndarray  # prompt tokens computed in each pass (static: the padded rectangle)
    pass_context: np.ndarray  # cached tokens read in each pass
    # Set by the memory-aware engine: the pass of each first token (later than the start under chunked prefill),
    # and the engine's whole schedule (cells, events, blocks per pass).
    first_pass: np.ndarray | None = None
    schedule: object = None
    rules: Policy | None = field(default=None, repr=False)  # the policy object that made it (set from `policy`)

    def __post_init__(self):
        carry_policy(self)

    @property
    def passes(self) -> int:
        """Return the number of forward passes."""
        return len(self.pass_start_ms)

    @cached_property
    def arrival_ms(self) -> np.ndarray:
        """Return each request's arrival time."""
        return np.array([r.arrival for r in self.requests], dtype=float)

    @property
    def start_ms(self) -> np.ndarray:
        """Return when each request's first pass starts."""
        return self.pass_start_ms[self.start_pass]

    @property
    def first_token_ms(self) -> np.ndarray:
        """Return when each request's first token comes out (the end of its prefill pass)."""
        return self.pass_end_ms[self.start_pass if self.first_pass is None else self.first_pass]

    @property
    def finish_ms(self) -> np.ndarray:
        """Return when each request's last token comes out."""
        return self.pass_end_ms[self.finish_pass - 1]

    @property
    def release_ms(self) -> np.ndarray:
        """Return when each request's slot is free again."""
        return self.pass_end_ms[self.release_pass - 1]

    @property
    def drain_ms(self) -> float:
        """Return when the last request finishes."""
        return float(self.finish_ms.max()) if len(self.requests) else 0.0

    @cached_property
    def pass_ms(self) -> np.ndarray:
        """Return each pass's duration."""
        return self.pass_end_ms - self.pass_start_ms


class PassRunner(Protocol):
    """What a timed scheduler's passes run on: the simulator's cost model, or a real engine on the wall clock.

    The scheduler decides (who is admitted, when a static batch forms) from the clock these calls return, so the
    online replay (`replay.online`) and the simulator share one implementation of every scheduling rule.
    """

    def wait(self, until_ms: float) -> float:
        """Return the clock once it has reached `until_ms` (nothing runs meanwhile)."""
        ...

    def on_admit(self, request: int, slot: int) -> None:
        """Continuous: the request joins the running batch in this slot before the next pass."""
        ...

    def on_retire(self, request: int) -> None:
        """Continuous: the request finished in the pass just run; its slot and memory are free."""
        ...

    def run_pass(self, rows: int, prefill: int, context: int, began_ms: float) -> float:
        """Continuous: run one pass over the running batch, begun at `began_ms`; return the clock at its end."""
        ...

    def run_batch(
        self, members: list[int], rows: np.ndarray, prefill: np.ndarray, context: np.ndarray, began_ms: float
    ) -> np.ndarray:
        """Static: run a whole batch's passes (members in slot order) from `began_ms`; return each pass's end."""
        ...


class CostRunner:
    """The simulator's PassRunner: waiting jumps the clock, and a pass lasts what the cost model says."""

    simulated = True  # its hooks do nothing: a loop may skip the calls, once per pass and request

    def __init__(self, cost: StepCost):
        self.cost = cost
        self.step = scalar_pass_ms(cost)
        self.rectangles = prices_rectangles(cost)
        self.wake = wake_of(cost)
        self.last_end = 0.0  # where the previous pass ended: a pass that starts later follows an idle gap

    def wait(self, until_ms: float) -> float:
        """Return `until_ms`: a simulated clock jumps."""
        return until_ms

    def on_admit(self, request: int, slot: int) -> None:
        """Nothing to do: the cost model needs no state."""

    def on_retire(self, request: int) -> None:
        """Nothing to do: the cost model needs no state."""

    def run_pass(self, rows: int, prefill: int, context: int, began_ms: float) -> float:
        """Return `began_ms` plus the pass's cost (and the wake, after an idle gap)."""
        cost = self.step(rows, prefill, context)
        if self.wake is not None and began_ms > self.last_end:
            cost = cost + self.wake(began_ms - self.last_end)
        self.last_end = began_ms + cost
        return self.last_end

    def run_batch(self, members, rows, prefill, context, began_ms: float) -> np.ndarray:
        """Return the passes' ends: the costs summed in order from `began_ms`, as the per-pass oracle adds them."""
        length = len(rows)
        if self.rectangles:  # static's own profile: its prompt pass is priced as the rectangle of its rows
            rows = np.where(prefill > 0, len(members), rows)
        done = np.array(np.broadcast_to(self.cost.pass_ms(rows, prefill, context), (length,)), dtype=float)
        if self.wake is not None and began_ms > self.last_end:  # the batch's first pass follows an idle gap
            done[0] += self.wake(began_ms - self.last_end)
        done[0] += began_ms  # so the running sum is ((clock + c0) + c1) + ..., the oracle's order, bit for bit
        ends = np.cumsum(done)
        self.last_end = float(ends[-1])
        return ends


def simulate_timed(
    requests: Sequence[Request],
    slots: int,
    policy: str | Policy,
    cost: StepCost,
    batch_timeout_ms: float = 0.0,
    memory=None,
    token_budget: int | None = None,
) -> TimedRun:
    """Return the schedule of `requests` (arrivals in ms) on `slots` slots, each pass costed by `cost`.

    A policy's own timed loop runs where `fast_loop_for` says (an unlimited pool, no budget); everything else
    runs in `core.sched.engine` (the same schedules where both apply, tested).
    """
    pol = get_policy(policy)
    if fast_loop_for(pol, memory, token_budget, timed=True) is None:
        return as_timed(schedule(requests, slots, pol, memory or UNLIMITED, cost, batch_timeout_ms, token_budget))
    return schedule_timed(requests, slots, pol, CostRunner(cost), batch_timeout_ms, cost.name)


def schedule_timed(
    requests: Sequence[Request],
    slots: int,
    policy: str | Policy,
    runner: PassRunner,
    batch_timeout_ms: float = 0.0,
    cost_name: str = "measured",
) -> TimedRun:
    """Return the schedule of `requests` (arrivals in ms) on `slots` slots, its passes run by `runner`.

    Only a policy with its own timed loop (`Policy.fast_timed`) runs on a runner; the others are refused, naming those.
    """
    pol = get_policy(policy)
    loop = fast_loop_for(pol, None, None, timed=True)  # the one place that decides, here with nothing to refuse
    if loop is None:
        able = ", ".join(name for name, p in REGISTRY.items() if p.fast_timed is not None)
        raise ValueError(f"a pass runner follows only {able}, not {pol.name}")
    if not isinstance(slots, (int, np.integer)) or not 1 <= slots <= MAX_SLOTS:
        raise ValueError(f"slots must be an integer in 1..{MAX_SLOTS}, got {slots!r}")
    if not 0 <= batch_timeout_ms < float("inf"):
        raise ValueError(f"batch_timeout_ms must be a finite number >= 0, got {batch_timeout_ms!r}")
    requests = tuple(requests)
    check_workload(len(requests), sum(r.output_tokens for r in requests))
    arrivals = [r.arrival for r in requests]
    order = sorted(range(len(requests)), key=arrivals.__getitem__)  # FCFS: a stable sort keeps trace order on ties
    out = loop(requests, order, slots, runner, float(batch_timeout_ms))
    slot, start, finish, release, starts, ends, rows, prefill, context = out
    as_int = lambda xs: np.array(xs, dtype=np.int64)  # noqa: E731
    return TimedRun(
        requests,
        slots,
        pol,
        float(batch_timeout_ms),
        cost_name,
        as_int(slot),
        as_int(start),
        as_int(finish),
        as_int(release),
        np.array(starts, dtype=float),
        np.array(ends, dtype=float),
        as_int(rows),
        as_int(prefill),
        as_int(context),
    )


@dataclass(frozen=True)
class TimedMetrics:
    """What a timed run achieved, in milliseconds: drain, throughput and latency percentiles."""

    drain_ms: float
    tokens_per_s: float
    ttft_ms: dict[str, float]  # time to first token: mean, p50, p90, p99
    itl_ms: dict[str, float]  # inter-token latency, per token after the first
    e2e_ms: dict[str, float]  # arrival to last token

    def as_dict(self) -> dict:
        """Return the metrics as a plain JSON-ready dict."""
        return {
            "drain_ms": self.drain_ms,
            "tokens_per_s": self.tokens_per_s,
            "ttft_ms": self.ttft_ms,
            "itl_ms": self.itl_ms,
            "e2e_ms": self.e2e_ms,
        }


def _summary(values: np.ndarray, weights: np.ndarray | None = None) -> dict[str, float]:
    weights = np.ones(len(values), dtype=np.int64) if weights is None else weights
    p50, p90, p99 = weighted_percentiles(values, weights, (50, 90, 99))
    mean = float(np.average(values, weights=weights)) if len(values) and weights.sum() else 0.0
    return {"mean": mean, "p50": p50, "p90": p90, "p99": p99}


def timed_metrics(run: TimedRun) -> TimedMetrics:
    """Return drain, tokens/s, TTFT, per-token inter-token latency and end-to-end latency of a timed run."""
    tokens = sum(r.output_tokens for r in run.requests)
    # A pass's later tokens: one per request that is past its first token and emits one in the pass. A token that
    # follows its request's previous one back to back waited that pass; one that resumes after a pause or a
    # preemption waited from its previous token's pass to its own (`gaps`).
    diff = np.zeros(run.passes + 1, dtype=np.int64)  # pass indices run 0..passes
    gaps = np.zeros(0)
    if run.schedule is None:
        np.add.at(diff, run.start_pass + 1, 1)
        np.add.at(diff, run.finish_pass, -1)
    else:  # preempted, chunked or paused: the passes that emit (generating or recomputing cells), less first tokens
        cells = run.schedule.cells
        emitting = cells[(cells[:, 4] == GENERATING) | (cells[:, 4] == RECOMPUTE)]
        emitting = emitting[np.lexsort((emitting[:, 2], emitting[:, 0]))]
        np.add.at(diff, emitting[:, 2], 1)
        np.add.at(diff, emitting[:, 3], -1)
        np.add.at(diff, run.first_pass, -1)
        np.add.at(diff, run.first_pass + 1, 1)
        resumed = np.flatnonzero(emitting[1:, 0] == emitting[:-1, 0]) + 1  # a cell after its request's earlier one
        lo, before = emitting[resumed, 2], emitting[resumed - 1, 3] - 1
        np.add.at(diff, lo, -1)
        np.add.at(diff, lo + 1, 1)
        gaps = run.pass_end_ms[lo] - run.pass_end_ms[before]
    later_tokens = np.cumsum(diff)[: run.passes]
    drain = run.drain_ms
    itl = (
        _summary(run.pass_ms, later_tokens)
        if not len(gaps)
        else _summary(np.concatenate([run.pass_ms, gaps]), np.concatenate([later_tokens, np.ones(len(gaps), int)]))
    )
    return TimedMetrics(
        drain_ms=drain,
        tokens_per_s=tokens / (drain / 1e3) if drain else 0.0,
        ttft_ms=_summary(run.first_token_ms - run.arrival_ms),
        itl_ms=itl,
        e2e_ms=_summary(run.finish_ms - run.arrival_ms),
    )


def as_timed(s: Schedule) -> TimedRun:
    """Return a clocked schedule as the `TimedRun` the clock views and timed metrics read."""
    return TimedRun(
        s.requests,
        s.slots,
        s.rules,
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
