"""What engineers judge a serving engine by, per request and in all: TTFT, ITL, goodput, SLO attainment, fairness.

On either clock (a step is a pass of 1 under the unit cost): each request's tokens come out at the ends of the passes
it emits in, so its time to first token, its inter-token gaps and its end-to-end latency are read off the run. Goodput
is DistServe's: requests per second (per step on the step clock) that met both targets, the TTFT and the p99 of the
request's own inter-token gaps. Fairness is Jain's index over each request's slowdown: its latency over the latency
it would have had alone on an idle engine under the same policy and cost.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import asdict, dataclass, replace

import numpy as np

from core.clock.cost import StepCost
from core.sched.timed import TimedRun, simulate_timed
from core.states import GENERATING, RECOMPUTE
from core.stats import weighted_percentiles


def emitting_passes(run: TimedRun) -> list[np.ndarray]:
    """Return, per request, the passes whose end brings it a token, in order (one per output token)."""
    if run.schedule is None:  # one stay each, no chunks: a token per pass from its start
        return [np.arange(s, f) for s, f in zip(run.start_pass.tolist(), run.finish_pass.tolist())]
    cells = run.schedule.cells
    emits = cells[(cells[:, 4] == GENERATING) | (cells[:, 4] == RECOMPUTE)]
    out: list[list[int]] = [[] for _ in run.requests]
    for request, _, lo, hi, _ in emits.tolist():
        out[request].extend(range(lo, hi))
    return [np.array(sorted(passes), dtype=np.int64) for passes in out]


def p99(values: np.ndarray) -> float:
    """Return the 99th percentile (the lower value at a tie, as every percentile here), 0 for no values."""
    return weighted_percentiles(values, np.ones(len(values), dtype=np.int64), (99,))[0]


def jain_index(values: Sequence[float]) -> float:
    """Return Jain's fairness index (sum x)^2 / (n sum x^2): 1 when all are equal, 1/n when one has everything."""
    x = np.asarray(values, dtype=float)
    return float(x.sum() ** 2 / (len(x) * (x**2).sum())) if len(x) and (x**2).sum() else 1.0


def alone_latency(run: TimedRun, cost: StepCost) -> np.ndarray:
    """Return each request's latency on an idle engine: it alone, under the run's policy, slots and cost."""
    budget = run.schedule.token_budget if run.schedule is not None else None
    return np.array(
        [
            simulate_timed([replace(r, arrival=0)], run.slots, run.rules, cost, token_budget=budget).drain_ms
            for r in run.requests
        ]
    )


@dataclass(frozen=True)
class PerRequest:
    """Each request's figures, in the run's time unit (ms on a clock, steps on the step clock)."""

    ttft: np.ndarray  # arrival to first token
    itl_p99: np.ndarray  # the p99 of its own inter-token gaps (0 for a one-token answer)
    latency: np.ndarray  # arrival to last token
    wait: np.ndarray  # arrival to first admission
    slowdown: np.ndarray  # latency over the latency alone


def per_request(run: TimedRun, cost: StepCost) -> PerRequest:
    """Return every request's TTFT, ITL p99, latency, queue wait and slowdown."""
    ends = run.pass_end_ms
    passes = emitting_passes(run)
    arrival = run.arrival_ms
    first = np.array([ends[p[0]] for p in passes]) - arrival
    itl = np.array([p99(np.diff(ends[p])) for p in passes])
    latency = run.finish_ms - arrival
    return PerRequest(first, itl, latency, run.start_ms - arrival, latency / alone_latency(run, cost))


@dataclass(frozen=True)
class Serving:
    """A run's serving figures against two targets; times in the run's unit, rates per second (ms) or per step."""

    ttft_p50: float
    ttft_p99: float
    itl_p50: float  # over every inter-token gap of every request
    itl_p99: float
    latency_p50: float
    latency_p99: float
    wait_mean: float
    throughput: float  # output tokens per second (per step on the step clock)
    preemptions: int
    met: int  # requests that met both targets
    slo_attainment: float  # their share
    goodput: float  # their rate: per second (per step on the step clock)
    fairness: float  # Jain's index over the slowdowns

    def as_dict(self) -> dict:
        """Return the figures as a JSON-ready dict."""
        return asdict(self)


def serving_metrics(run: TimedRun, cost: StepCost, ttft_target: float, itl_target: float) -> Serving:
    """Return the run's serving figures; `ttft_target` and `itl_target` in the run's unit (ms, or steps)."""
    r = per_request(run, cost)
    ends = run.pass_end_ms
    gaps = np.concatenate([np.diff(ends[p]) for p in emitting_passes(run)] or [np.zeros(0)])
    met = int(((r.ttft <= ttft_target) & (r.itl_p99 <= itl_target)).sum())
    n, drain = len(run.requests), run.drain_ms
    per_unit = 1e3 / drain if run.cost != "unit" and drain else (1 / drain if drain else 0.0)  # per s, or per step
    pct = lambda values, q: weighted_percentiles(values, np.ones(len(values), dtype=np.int64), (q,))[0]  # noqa: E731
    return Serving(
        ttft_p50=pct(r.ttft, 50),
        ttft_p99=pct(r.ttft, 99),
        itl_p50=pct(gaps, 50),
        itl_p99=pct(gaps, 99),
        latency_p50=pct(r.latency, 50),
        latency_p99=pct(r.latency, 99),
        wait_mean=float(r.wait.mean()) if n else 0.0,
        throughput=sum(q.output_tokens for q in run.requests) * per_unit,
        preemptions=run.schedule.preemptions if run.schedule is not None else 0,
        met=met,
        slo_attainment=met / n if n else 1.0,
        goodput=met * per_unit,
        fairness=jain_index(r.slowdown),
    )
