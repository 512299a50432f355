"""Throughput and latency against batch size at a fixed arrival rate, under a step-time cost model."""

from __future__ import annotations

from dataclasses import dataclass, replace

import numpy as np

from .metrics import compute_metrics
from .schedule import simulate
from .traffic import TrafficConfig, generate


@dataclass(frozen=True)
class CostModel:
    """What one decode step costs: reading the weights and the batch's KV cache, or computing, whichever is slower."""

    params_b: float = 7.0  # model parameters, billions
    bytes_per_param: float = 2.0  # fp16/bf16 weights
    kv_bytes_per_token: float = 524_288.0  # 2 (K,V) x 32 layers x 4096 dims x 2 bytes: a 7B Llama
    mem_bw_gbs: float = 2_000.0  # HBM bandwidth, GB/s
    tflops: float = 150.0  # sustained dense throughput, TFLOP/s
    overhead_ms: float = 1.0  # launch and scheduling overhead per step

    def __post_init__(self) -> None:
        for name in ("params_b", "bytes_per_param", "mem_bw_gbs", "tflops"):
            if not getattr(self, name) > 0:
                raise ValueError(f"{name} must be > 0, got {getattr(self, name)!r}")
        for name in ("kv_bytes_per_token", "overhead_ms"):
            if not getattr(self, name) >= 0:
                raise ValueError(f"{name} must be >= 0, got {getattr(self, name)!r}")

    def step_ms(self, batch: int, context_tokens: float) -> float:
        """Return the milliseconds of one decode step for `batch` sequences of `context_tokens` cached tokens."""
        weight_bytes = self.params_b * 1e9 * self.bytes_per_param
        kv_bytes = batch * context_tokens * self.kv_bytes_per_token
        memory_ms = (weight_bytes + kv_bytes) / (self.mem_bw_gbs * 1e9) * 1e3
        compute_ms = 2 * self.params_b * 1e9 * batch / (self.tflops * 1e12) * 1e3
        return max(memory_ms, compute_ms) + self.overhead_ms


@dataclass(frozen=True)
class SweepPoint:
    """One batch size's outcome: step time, throughput and latency in real units."""

    batch: int
    step_ms: float  # a full batch's step: the inter-token latency once the batch fills
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


def active_per_step(run) -> np.ndarray:
    """Return how many requests generate at each step of a run (a difference array, no per-cell loop)."""
    diff = np.zeros(run.drain + 1, dtype=np.int64)
    np.add.at(diff, run.start, 1)
    np.add.at(diff, run.finish, -1)
    return np.cumsum(diff)[: run.drain]


def _costed_run(traffic: TrafficConfig, rate_per_s: float, batch: int, model: CostModel, context: float):
    """Simulate at `batch` slots with each step costed by its real occupancy; return (run, per-step ms)."""
    clock_ms = model.step_ms(batch, context)
    for _ in range(6):
        # Arrivals are in seconds; the step they land in depends on the mean step time, so iterate to a fixed point.
        requests = generate(replace(traffic, arrivals="poisson", rate=rate_per_s * clock_ms / 1e3))
        run = simulate(requests, batch, "continuous")
        active = active_per_step(run)
        costs = np.array([model.step_ms(int(a), context) if a else clock_ms for a in active])
        new_clock = float(costs.mean()) if len(costs) else clock_ms
        if abs(new_clock - clock_ms) <= 1e-3 * clock_ms:
            break
        clock_ms = new_clock
    return run, costs


def sweep(
    rate_per_s: float = 10.0,
    batches: tuple[int, ...] = DEFAULT_BATCHES,
    model: CostModel | None = None,
    traffic: TrafficConfig = SWEEP_TRAFFIC,
    itl_target_ms: float = 50.0,
) -> list[SweepPoint]:
    """Return one SweepPoint per batch size under continuous batching, each step costed by its occupancy."""
    model = model or CostModel()
    requests = generate(traffic)
    context = float(np.mean([r.prompt_tokens + r.output_tokens / 2 for r in requests])) if requests else 0.0
    points = []
    for batch in batches:
        run, costs = _costed_run(traffic, rate_per_s, batch, model, context)
        clock = np.concatenate([[0.0], np.cumsum(costs)])
        done = run.finish <= run.drain
        latency_ms = (clock[run.finish] - clock[np.minimum(run.arrival, run.drain)])[done]
        full_step_ms = model.step_ms(batch, context)
        points.append(
            SweepPoint(
                batch=batch,
                step_ms=full_step_ms,
                tokens_per_s=int((run.finish - run.start).sum()) / (clock[-1] / 1e3) if clock[-1] else 0.0,
                p99_latency_ms=float(np.percentile(latency_ms, 99)) if len(latency_ms) else 0.0,
                avg_latency_ms=float(latency_ms.mean()) if len(latency_ms) else 0.0,
                utilisation=compute_metrics(run).utilisation,
                meets_target=full_step_ms <= itl_target_ms,
            )
        )
    return points


def knee(points: list[SweepPoint]) -> SweepPoint | None:
    """Return the largest batch whose full-batch step time (the inter-token latency) still meets the target."""
    meeting = [p for p in points if p.meets_target]
    return max(meeting, key=lambda p: p.batch) if meeting else None
