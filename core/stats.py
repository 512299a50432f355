"""Percentiles shared by the clock's runs and the metrics: each value may count several times."""

from __future__ import annotations

import numpy as np


def weighted_percentiles(values: np.ndarray, weights: np.ndarray, qs: tuple[float, ...]) -> tuple[float, ...]:
    """Return percentiles of `values` where value i counts `weights[i]` times (the lower value at a tie)."""
    if not len(values) or weights.sum() == 0:
        return tuple(0.0 for _ in qs)
    order = np.argsort(values, kind="stable")
    cumulative = np.cumsum(weights[order])
    total = cumulative[-1]
    return tuple(float(values[order][np.searchsorted(cumulative, q / 100 * total)]) for q in qs)
