"""Throughput and latency against batch size at a fixed arrival rate, on the timed simulator's clock.

One cost model, one clock: each batch size's point is `simulate_timed` of the same requests (arrivals in ms) under
continuous batching, read by `timed_metrics`. A pass that admits a request also computes its prompt, so the tokens
decoding beside a prefill wait for it; the decode-only reference re-costs the very same passes without their prefill
work, to show what that stall does to the knee.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

import numpy as np

from core.clock.cost import Roofline, StepCost
from core.limits import LimitError, check_steps
from core.sched.timed import TimedRun, _summary, simulate_timed, timed_metrics
from core.workload.request import Request
from core.workload.traffic import TrafficConfig, generate

# The sweep's name for the core's one roofline cost model (clock/cost.py): a pass reads every weight and the batch's
# KV cache, or computes (decoding rows and prompt tokens), whichever is slower.
CostModel = Roofline


@dataclass(frozen=True)
class SweepPoint:
    """One batch size's outcome on the timed clock, with the decode-only figures beside it as references."""

    batch: int
    step_ms: float  # reference: a decode-only pass over a full batch at the workload's mean context
    itl_p50_ms: float  # on the clock: each token after a request's first waits its whole pass, prefill included
    itl_p99_ms: float
    decode_itl_p99_ms: float  # the same passes costed without their prefill work: never above itl_p99_ms
    tokens_per_s: float
    p99_latency_ms: float  # arrival to last token
    avg_latency_ms: float
    # Admission to last token: what a request feels once it has a slot, without the wait for one. Past the knee it
    # rises with the batch (slower passes) while the end-to-end latency, below capacity, only stops falling.
    p99_admitted_ms: float
    utilisation: float  # share of slot-passes that produced a token
    meets_target: bool  # itl_p99_ms <= the target
    decode_meets_target: bool  # decode_itl_p99_ms <= the target: what the knee would be if prefill never stalled
    peak_rows: int  # the most rows any pass ran
    # Every larger size ran this same run: the cap never turned a request away (set by `sweep` over all sizes).
    one_run: bool = False


# 2,000 requests is ~25 s of traffic at the default rate: a big batch fills and stays full long enough for its p99.
# The whole sweep is ~0.6 s of CPU here, most of it batch 1's ~390,000 passes.
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
# Enough load to fill a big batch on the default presets, so both knees show inside 1-512 (at a 50 ms target: 32 on
# the clock, 128 for decode alone).
DEFAULT_RATE_PER_S = 80.0


def poisson_requests(traffic: TrafficConfig, rate_per_s: float) -> list[Request]:
    """Return the generator's requests with Poisson arrivals at `rate_per_s`, in milliseconds."""
    try:
        return generate(replace(traffic, arrivals="poisson", rate=rate_per_s / 1e3))
    except LimitError as exc:
        raise LimitError(f"{rate_per_s:g} requests/s (arrivals in ms): {exc}") from None


def mean_context(requests: list[Request]) -> float:
    """Return the cached tokens a decoding request holds on average: its prompt and half its output."""
    return float(np.mean([r.prompt_tokens + r.output_tokens / 2 for r in requests])) if requests else 0.0


def without_prefill(run: TimedRun, cost: StepCost) -> TimedRun:
    """Return the run with each pass lasting only its decode work: its rows and their context, no prompt tokens.

    Only the inter-token latency of the result means anything (its passes no longer abut): it is what the tokens
    would have felt had no prefill shared their passes.
    """
    decode_ms = np.broadcast_to(cost.pass_ms(run.pass_rows, 0, run.pass_context), (run.passes,))
    return replace(run, pass_end_ms=run.pass_start_ms + decode_ms)


def admitted_p99(run: TimedRun) -> float:
    """Return the p99 time from admission to last token (timed_metrics' percentile, over each request once)."""
    return _summary(run.finish_ms - run.start_ms)["p99"]


def sweep_point(requests: list[Request], batch: int, cost: StepCost, itl_target_ms: float) -> SweepPoint:
    """Return one batch size's point: continuous batching of `requests` (arrivals in ms) on the timed clock."""
    check_steps(sum(r.output_tokens for r in requests), f"the sweep at batch {batch} (a pass per token at most)")
    run = simulate_timed(requests, batch, "continuous", cost)
    timed, decode = timed_metrics(run), timed_metrics(without_prefill(run, cost)).itl_ms["p99"]
    tokens = int((run.finish_pass - run.start_pass).sum())
    return SweepPoint(
        batch=batch,
        step_ms=float(cost.step_ms(batch, mean_context(requests))),
        itl_p50_ms=timed.itl_ms["p50"],
        itl_p99_ms=timed.itl_ms["p99"],
        decode_itl_p99_ms=decode,
        tokens_per_s=timed.tokens_per_s,
        p99_latency_ms=timed.e2e_ms["p99"],
        avg_latency_ms=timed.e2e_ms["mean"],
        p99_admitted_ms=admitted_p99(run),
        utilisation=tokens / (run.passes * batch) if run.passes else 0.0,
        peak_rows=int(run.pass_rows.max()) if run.passes else 0,
        meets_target=timed.itl_ms["p99"] <= itl_target_ms,
        decode_meets_target=decode <= itl_target_ms,
    )


def sweep(
    rate_per_s: float = DEFAULT_RATE_PER_S,
    batches: tuple[int, ...] = DEFAULT_BATCHES,
    model: StepCost | None = None,
    traffic: TrafficConfig = SWEEP_TRAFFIC,
    itl_target_ms: float = 50.0,
    requests: list[Request] | None = None,
) -> list[SweepPoint]:
    """Return one SweepPoint per batch size: the same requests under continuous batching, on the timed clock.

    The requests are the generator's (`traffic`, Poisson at `rate_per_s`) unless `requests` (arrivals in ms) are given.
    """
    model = model or CostModel()
    requests = poisson_requests(traffic, rate_per_s) if requests is None else requests
    return mark_one_run([sweep_point(requests, batch, model, itl_target_ms) for batch in batches])


SAME_RUN_FIELDS = ("itl_p50_ms", "itl_p99_ms", "decode_itl_p99_ms", "tokens_per_s", "p99_latency_ms", "avg_latency_ms",
                   "p99_admitted_ms", "peak_rows")  # fmt: skip


def mark_one_run(points: list[SweepPoint]) -> list[SweepPoint]:
    """Return the points with `one_run` set on the sizes from which every larger size is the same run.

    The largest size must be one the load never fills (its run is the run without a cap); a smaller size is the same
    run where its figures equal the largest's, to the bit (the cap never turned a request away there either).
    """
    if not points or points[-1].peak_rows >= points[-1].batch:
        return points
    same = tuple(getattr(points[-1], f) for f in SAME_RUN_FIELDS)
    out, inside = list(points), True
    for i in range(len(points) - 1, -1, -1):
        inside = inside and tuple(getattr(points[i], f) for f in SAME_RUN_FIELDS) == same
        out[i] = replace(points[i], one_run=inside)
    return out


def retarget(points: list[SweepPoint], itl_target_ms: float) -> list[SweepPoint]:
    """Return the points judged against another target (the runs do not depend on it)."""
    return [
        replace(p, meets_target=p.itl_p99_ms <= itl_target_ms, decode_meets_target=p.decode_itl_p99_ms <= itl_target_ms)
        for p in points
    ]


def same_run_from(points: list[SweepPoint]) -> SweepPoint | None:
    """Return the smallest size from which every larger size is the same run (`one_run`), or None."""
    return next((p for p in points if p.one_run), None)


def _named(meeting: list[SweepPoint], points: list[SweepPoint]) -> SweepPoint | None:
    """Return the largest size meeting a target, or the first of the sizes that are all its run."""
    if not meeting:
        return None
    best = max(meeting, key=lambda p: p.batch)
    same = same_run_from(points)
    return same if same is not None and same.batch <= best.batch else best


def knee(points: list[SweepPoint]) -> SweepPoint | None:
    """Return the largest batch whose inter-token latency (p99 on the clock, prefill stalls included) meets the target.

    Under a load that fills the batch, prefill passes stall the decoders beside them and pull the knee below where a
    decode-only step would put it; under a light load a big batch never fills, and the knee moves up, to the first
    of the sizes that all run the same run (`one_run`): none of the larger ones is a knee of its own.
    """
    return _named([p for p in points if p.meets_target], points)


def decode_knee(points: list[SweepPoint]) -> SweepPoint | None:
    """Return the largest batch whose decode-only inter-token p99 meets the target: the knee without prefill stalls."""
    return _named([p for p in points if p.decode_meets_target], points)


def kept_full_tokens_per_s(requests: list[Request], batch: int, cost: StepCost) -> float:
    """Return the tokens/s a batch of `batch` rows serves while kept full: what it sustains against a queue.

    Every request is queued at time 0 and the passes before the last admission are counted, when every row is busy
    (continuous batching refills a slot in the pass after it frees). Poisson arrivals at a rate whose tokens/s exceed
    this figure outrun the batch: its queue grows for as long as they keep coming; below it the queue stays bounded.
    With no more requests than rows, nothing queues, and the whole run is counted.
    """
    if not requests:
        return 0.0
    run = simulate_timed([replace(r, arrival=0) for r in requests], batch, "continuous", cost)
    last = int(run.start_pass.max()) or run.passes
    # A request yields one token per pass from its first (the prefill's) to finish_pass - 1.
    tokens = np.clip(np.minimum(run.finish_pass, last) - run.start_pass, 0, None).sum()
    return float(tokens / (run.pass_end_ms[last - 1] - run.pass_start_ms[0]) * 1e3)


def capacities(
    model: StepCost, batches: tuple[int, ...] = DEFAULT_BATCHES, traffic: TrafficConfig = SWEEP_TRAFFIC
) -> dict[int, float]:
    """Return each batch size's tokens/s kept full on the sweep's traffic (its lengths; arrivals do not matter)."""
    requests = generate(traffic)
    return {b: kept_full_tokens_per_s(requests, b, model) for b in batches}
