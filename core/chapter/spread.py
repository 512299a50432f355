"""Exercise 2: the same arrivals with heavy-tailed, uniform and fixed lengths; how much continuous batching gains."""

from __future__ import annotations

from dataclasses import dataclass, replace

import numpy as np

from core.measure.metrics import Comparison, compare
from core.sched.run import Run
from core.sched.schedule import simulate
from core.workload.traffic import LENGTH_KINDS, TrafficConfig, generate

# A queue that builds (200 requests over 200 steps on 8 slots), so the drain measures throughput, not arrivals.
SPREAD_TRAFFIC = TrafficConfig(seed=4, requests=200, arrival_window=200, mean_tokens=64, max_tokens=1024, tail=1.2)
SPREAD_SLOTS = 8
SIGMA_RANGE = (0.1, 2.0)  # the slider's log-normal sigma for the heavy-tailed lengths


@dataclass(frozen=True)
class SpreadCase:
    """One length distribution on the shared arrivals: its lengths, static's batches and the head-to-head."""

    kind: str
    lengths: np.ndarray  # output tokens per request
    batch_ratios: np.ndarray  # max/mean output length of each static batch, in batch order
    comparison: Comparison  # static vs continuous, each over its own drain

    @property
    def drain_ratio(self) -> float:
        """Return static drain / continuous drain: how many times sooner continuous empties the queue."""
        return self.comparison.drain_ratio

    @property
    def padding_share(self) -> float:
        """Return the share of static's slot-time spent as padding."""
        return self.comparison["static"].padding_share


def static_batch_ratios(run: Run) -> np.ndarray:
    """Return max/mean output length of each static batch (members share a start step), in batch order."""
    lengths = run.finish - run.start
    starts = np.unique(run.start)
    return np.array([lengths[run.start == s].max() / lengths[run.start == s].mean() for s in starts])


def spread_case(kind: str, sigma: float, traffic: TrafficConfig = SPREAD_TRAFFIC, slots: int = SPREAD_SLOTS):
    """Return the SpreadCase of one length kind; the arrivals are the same for every kind and sigma."""
    requests = generate(replace(traffic, lengths=kind, tail=sigma))
    static, continuous = simulate(requests, slots, "static"), simulate(requests, slots, "continuous")
    lengths = np.array([r.output_tokens for r in requests], dtype=np.int64)
    return SpreadCase(kind, lengths, static_batch_ratios(static), compare(static, continuous))


def spread_study(sigma: float, traffic: TrafficConfig = SPREAD_TRAFFIC, slots: int = SPREAD_SLOTS) -> list[SpreadCase]:
    """Return heavy-tailed (log-normal `sigma`), uniform and fixed lengths on the same arrivals, in that order."""
    return [spread_case(kind, sigma, traffic, slots) for kind in LENGTH_KINDS]
