"""Throughput and latency against batch size at a fixed arrival rate, under a step-time cost model."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, replace

import numpy as np

from .cost import Roofline
from .limits import LimitError, check_steps
from .metrics import compute_metrics, weighted_percentiles
from .request import Request
from .schedule import simulate
from .traffic import TrafficConfig, generate

# The sweep's name for the core's one roofline cost model (core/cost.py): a decode step reads every weight and the
# batch's KV cache, or computes, whichever is slower.
CostModel = Roofline


@dataclass(frozen=True)
class SweepPoint:
    """One batch size's outcome: step time, throughput and latency in real units."""

    batch: int
    step_ms: float  # a full batch's step: the inter-token latency once the batch fills
    itl_p50_ms: float  # inter-token latency as the tokens felt it: each token waits its step's cost
    itl_p99_ms: float
    tokens_per_s: float
    p99_latency_ms: float
    avg_latency_ms: float
    utilisation: float
    meets_target: bool


SWEEP_TRAFFIC = TrafficConfig(
    seed=4,
    requests=2000,
    arrivals="poisson",
    lengths="heavy",
    mean_tokens=200,
    max_tokens=2048,
    tail=1.1,
    mean_prompt_tokens=1000,
)
DEFAULT_BATCHES = (1, 2, 4, 8, 16, 32, 64, 128, 256, 512)
# Enough load to fill a big batch on the default presets, so the knee shows inside 1-512 (256 at a 50 ms target).
DEFAULT_RATE_PER_S = 80.0


def active_per_step(run) -> np.ndarray:
    """Return how many requests generate at each step of a run (a difference array, no per-cell loop)."""
    diff = np.zeros(run.drain + 1, dtype=np.int64)
    np.add.at(diff, run.start, 1)
    np.add.at(diff, run.finish, -1)
    return np.cumsum(diff)[: run.drain]


def _costed_run(workload: Callable[[float], list[Request]], batch: int, model: CostModel, context: float):
    """Simulate at `batch` slots with each step costed by its real occupancy; return (run, per-step ms)."""
    clock_ms = float(model.step_ms(batch, context))
    for _ in range(6):
        # Arrivals are in seconds; the step they land in depends on the mean step time, so iterate to a fixed point.
        run = simulate(workload(clock_ms), batch, "continuous")
        check_steps(run.drain, f"the sweep at batch {batch}")  # before the per-step arrays below
        active = active_per_step(run)
        costs = np.where(active > 0, model.step_ms(active, context), clock_ms)
        new_clock = float(costs.mean()) if len(costs) else clock_ms
        if abs(new_clock - clock_ms) <= 1e-3 * clock_ms:
            break
        clock_ms = new_clock
    return run, costs


def generated_workload(traffic: TrafficConfig, rate_per_s: float) -> Callable[[float], list[Request]]:
    """Return the generator's requests for a step time: Poisson at `rate_per_s`, in steps of that many ms."""

    def at(clock_ms: float) -> list[Request]:
        try:
            return generate(replace(traffic, arrivals="poisson", rate=rate_per_s * clock_ms / 1e3))
        except LimitError as exc:
            raise LimitError(f"{rate_per_s:g} requests/s in steps of {clock_ms:.3g} ms: {exc}") from None

    return at


def trace_workload(requests: list[Request], trace_step_ms: float) -> Callable[[float], list[Request]]:
    """Return a trace's requests for a step time: arrival steps of `trace_step_ms` re-bucketed into steps of that."""
    arrivals_ms = [r.arrival * trace_step_ms for r in requests]
    return lambda clock_ms: [replace(r, arrival=int(a // clock_ms)) for r, a in zip(requests, arrivals_ms)]


def sweep(
    rate_per_s: float = DEFAULT_RATE_PER_S,
    batches: tuple[int, ...] = DEFAULT_BATCHES,
    model: CostModel | None = None,
    traffic: TrafficConfig = SWEEP_TRAFFIC,
    itl_target_ms: float = 50.0,
    workload: Callable[[float], list[Request]] | None = None,
) -> list[SweepPoint]:
    """Return one SweepPoint per batch size under continuous batching, each step costed by its occupancy.

    The workload is the generator's (`traffic` at `rate_per_s`) unless `workload` maps a step time to requests
    (see `trace_workload`).
    """
    model = model or CostModel()
    workload = workload or generated_workload(traffic, rate_per_s)
    requests = workload(1.0)
    context = float(np.mean([r.prompt_tokens + r.output_tokens / 2 for r in requests])) if requests else 0.0
    points = []
    for batch in batches:
        run, costs = _costed_run(workload, batch, model, context)
        clock = np.concatenate([[0.0], np.cumsum(costs)])
        done = run.finish <= run.drain
        latency_ms = (clock[run.finish] - clock[np.minimum(run.arrival, run.drain)])[done]
        full_step_ms = float(model.step_ms(batch, context))
        itl = weighted_percentiles(costs, active_per_step(run), (50, 99))
        points.append(
            SweepPoint(
                batch=batch,
                step_ms=full_step_ms,
                itl_p50_ms=itl[0],
                itl_p99_ms=itl[1],
                tokens_per_s=int((run.finish - run.start).sum()) / (clock[-1] / 1e3) if clock[-1] else 0.0,
                p99_latency_ms=float(np.percentile(latency_ms, 99)) if len(latency_ms) else 0.0,
                avg_latency_ms=float(latency_ms.mean()) if len(latency_ms) else 0.0,
                utilisation=compute_metrics(run).utilisation,
                meets_target=itl[1] <= itl_target_ms,
            )
        )
    return points


def knee(points: list[SweepPoint]) -> SweepPoint | None:
    """Return the largest batch whose inter-token latency (p99, as the tokens felt it) still meets the target.

    Under a load that fills the batch this is where the full batch's step crosses the target; under a light load a
    big batch never fills, its steps stay short, and the knee moves up.
    """
    meeting = [p for p in points if p.meets_target]
    return max(meeting, key=lambda p: p.batch) if meeting else None
