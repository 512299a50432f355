"""What engineers judge a serving engine by: TTFT, TPOT, longest stall, goodput, SLO attainment, fairness.

On either clock (a step is a pass of 1 under the unit cost): each request's tokens come out at the ends of the passes
it emits in, so its time to first token, its inter-token gaps and its end-to-end latency are read off the run.

A request's time per output token (TPOT) is DistServe's (Zhong et al., OSDI 2024): (last token time - first token
time) / (output tokens - 1), 0 for a one-token answer. Its longest stall is its largest inter-token gap. Neither a
pooled p99 of gaps nor a p99 of one request's few gaps sees one long stall; the longest stall does, and the mean
TPOT charges every stall, long or short, by its length.

The SLO is DistServe's too: a request meets it when its TTFT <= the TTFT target and its mean TPOT <= the
inter-token (ITL/TPOT) target. Goodput is the requests per second (per step on the step clock) that met both; SLO
attainment their share. Fairness is Jain's index over each request's slowdown: its latency over the latency it would
have had alone on an idle engine under the same policy and cost.
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


def percentile(values: np.ndarray, q: float) -> float:
    """Return the q-th percentile (the lower value at a tie, as every percentile here), 0 for no values."""
    return weighted_percentiles(values, np.ones(len(values), dtype=np.int64), (q,))[0]


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
    tpot: np.ndarray  # mean time per output token after the first: (last - first) / (tokens - 1); 0 for one token
    stall: np.ndarray  # the longest stall: its largest inter-token gap (0 for a one-token answer)
    latency: np.ndarray  # arrival to last token
    wait: np.ndarray  # arrival to first admission
    slowdown: np.ndarray  # latency over the latency alone


def per_request(run: TimedRun, cost: StepCost) -> PerRequest:
    """Return every request's TTFT, mean TPOT, longest stall, latency, queue wait and slowdown."""
    times = [run.pass_end_ms[p] for p in emitting_passes(run)]
    arrival = run.arrival_ms
    first = np.array([t[0] for t in times]) - arrival
    tpot = np.array([(t[-1] - t[0]) / (len(t) - 1) if len(t) > 1 else 0.0 for t in times])
    stall = np.array([np.diff(t).max(initial=0.0) for t in times])
    latency = run.finish_ms - arrival
    return PerRequest(first, tpot, stall, latency, run.start_ms - arrival, latency / alone_latency(run, cost))


@dataclass(frozen=True)
class Serving:
    """A run's serving figures against two targets; times in the run's unit, rates per second (ms) or per step."""

    ttft_p50: float
    ttft_p99: float
    itl_p50: float  # ITL, all gaps pooled: over every inter-token gap of every request
    itl_p99: float
    tpot_p50: float  # over the requests of two tokens or more, each counted once by its mean TPOT
    tpot_p99: float
    stall_p99: float  # over the same requests, each counted once by its longest stall
    stall_max: float  # the longest stall of any request
    latency_p50: float
    latency_p99: float
    wait_mean: float
    throughput: float  # output tokens per second (per step on the step clock)
    preemptions: int
    met: int  # requests that met both targets: TTFT, and mean TPOT against the inter-token target
    slo_attainment: float  # their share
    goodput: float  # their rate: per second (per step on the step clock)
    fairness: float  # Jain's index over the slowdowns

    def as_dict(self) -> dict:
        """Return the figures as a JSON-ready dict."""
        return asdict(self)


def serving_metrics(run: TimedRun, cost: StepCost, ttft_target: float, itl_target: float) -> Serving:
    """Return the run's serving figures; `ttft_target` and `itl_target` (on mean TPOT) in the run's unit (ms, steps)."""
    r = per_request(run, cost)
    ends = run.pass_end_ms
    gaps = np.concatenate([np.diff(ends[p]) for p in emitting_passes(run)] or [np.zeros(0)])
    met = int(((r.ttft <= ttft_target) & (r.tpot <= itl_target)).sum())
    n, drain = len(run.requests), run.drain_ms
    per_unit = 1e3 / drain if run.cost != "unit" and drain else (1 / drain if drain else 0.0)  # per s, or per step
    several = np.array([q.output_tokens > 1 for q in run.requests], dtype=bool)  # a TPOT and a stall to speak of
    return Serving(
        ttft_p50=percentile(r.ttft, 50),
        ttft_p99=percentile(r.ttft, 99),
        itl_p50=percentile(gaps, 50),
        itl_p99=percentile(gaps, 99),
        tpot_p50=percentile(r.tpot[several], 50),
        tpot_p99=percentile(r.tpot[several], 99),
        stall_p99=percentile(r.stall[several], 99),
        stall_max=float(r.stall.max(initial=0.0)),
        latency_p50=percentile(r.latency, 50),
        latency_p99=percentile(r.latency, 99),
        wait_mean=float(r.wait.mean()) if n else 0.0,
        throughput=sum(q.output_tokens for q in run.requests) * per_unit,
        preemptions=run.schedule.preemptions if run.schedule is not None else 0,
        met=met,
        slo_attainment=met / n if n else 1.0,
        goodput=met * per_unit,
        fairness=jain_index(r.slowdown),
    )
