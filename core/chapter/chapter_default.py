"""The shape the app's default traffic must have over seeds 0-99: the chapter's lesson, visible at first sight."""

from __future__ import annotations

from dataclasses import dataclass, replace

import numpy as np

from core.measure.metrics import compute_metrics
from core.sched.policies import CHAPTER_PAIR
from core.sched.schedule import simulate
from core.workload.traffic import TrafficConfig, generate

SEEDS = range(100)
SLOTS, WINDOW = 4, 64


@dataclass(frozen=True)
class DefaultShape:
    """How static and continuous compare on a traffic config over many seeds (4 slots, 64-step window)."""

    continuous_utilisation_median: float
    static_utilisation_median: float
    static_completes_fewer: int  # seeds where static completes fewer requests in the window
    continuous_latency_lower: int  # seeds where continuous has the lower average latency
    seeds: int

    def meets_the_chapter(self) -> bool:
        """Return whether the shape is the chapter's: continuous 75-90% busy, static 40-55%, and visibly behind."""
        n = self.seeds
        return (
            0.75 <= self.continuous_utilisation_median <= 0.90
            and 0.40 <= self.static_utilisation_median <= 0.55
            and self.static_completes_fewer >= 0.9 * n
            and self.continuous_latency_lower >= 0.7 * n
        )


def default_shape(config: TrafficConfig | None = None, seeds=SEEDS) -> DefaultShape:
    """Return the shape of `config` (default: the app's default traffic) over `seeds`."""
    config = config or TrafficConfig()
    cont, stat, fewer, lower = [], [], 0, 0
    for seed in seeds:
        requests = generate(replace(config, seed=seed))
        s, c = (compute_metrics(simulate(requests, SLOTS, policy), WINDOW) for policy in CHAPTER_PAIR)
        cont.append(c.utilisation)
        stat.append(s.utilisation)
        fewer += s.completed < c.completed
        lower += c.avg_latency is not None and (s.avg_latency is None or c.avg_latency < s.avg_latency)
    return DefaultShape(float(np.median(cont)), float(np.median(stat)), fewer, lower, len(seeds))
