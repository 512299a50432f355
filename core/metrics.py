"""Metrics of a Run over a window of steps, and a head-to-head comparison of two runs on the same traffic."""

from __future__ import annotations

from dataclasses import asdict, dataclass

import numpy as np

from .run import GENERATING, PADDING, PREFILL, RECOMPUTE, Run

PERCENTILES = (50, 90, 99)


@dataclass(frozen=True)
class Metrics:
    """What a run achieved in steps [0, window); latencies in steps, shares as fractions of slot-steps.

    `avg_latency` and its percentiles count the requests completed in the window; `avg_latency_all` counts every
    request, measured to its finish past the window (DESIGN.md: "measure to the drain").
    """

    window: int
    completed: int
    requests: int
    useful_tokens: int
    utilisation: float
    padding_share: float
    idle_share: float
    avg_latency: float | None
    p50_latency: float | None
    p90_latency: float | None
    p99_latency: float | None
    avg_wait: float | None
    # Every request, each to its own finish (runs always drain, so none is left out): the latency that compares
    # modes. The four above are over the completed ones only, and a mode that completes fewer can look faster there.
    avg_latency_all: float | None
    p99_latency_all: float | None
    drain_steps: int
    throughput: float  # tokens per step over the whole run: all tokens / drain

    def as_dict(self) -> dict:
        """Return the metrics as a plain JSON-ready dict."""
        return asdict(self)


def _clipped_len(lo: np.ndarray, hi: np.ndarray, window: int) -> int:
    return int(np.maximum(np.minimum(hi, window) - np.minimum(lo, window), 0).sum())


def _mean(values: np.ndarray) -> float | None:
    return float(values.mean()) if len(values) else None


def _percentile(values: np.ndarray, q: float) -> float | None:
    # Linear interpolation between order statistics (numpy's default), so p50 is the median.
    return float(np.percentile(values, q)) if len(values) else None


def compute_metrics(run: Run, window: int | None = None) -> Metrics:
    """Return the run's metrics over steps [0, window); the window defaults to the drain time."""
    window = run.drain if window is None else int(window)
    if window < 0:
        raise ValueError(f"window must be >= 0, got {window}")
    slot_steps = window * run.slots
    chunk_cells = 0
    if run.cells is None:
        useful = _clipped_len(run.start, run.finish, window)
        padding = _clipped_len(run.finish, run.release, window)
    else:  # preempted or chunked: a token comes out of each generating or recomputing cell, none out of a chunk
        cells = run.cells
        emits = (cells[:, 4] == GENERATING) | (cells[:, 4] == RECOMPUTE)
        useful = _clipped_len(cells[emits, 2], cells[emits, 3], window)
        pad = cells[:, 4] == PADDING
        padding = _clipped_len(cells[pad, 2], cells[pad, 3], window)
        chunk = cells[:, 4] == PREFILL
        chunk_cells = _clipped_len(cells[chunk, 2], cells[chunk, 3], window)  # prefill chunks: busy, not idle
    done = run.finish <= window
    latency_all = run.finish - run.arrival
    latency = latency_all[done]
    wait = (run.start - run.arrival)[run.start < window]
    share = (lambda cells: cells / slot_steps) if slot_steps else (lambda cells: 0.0)
    total_tokens = sum(r.output_tokens for r in run.requests)
    return Metrics(
        window=window,
        completed=int(done.sum()),
        requests=len(run.requests),
        useful_tokens=useful,
        utilisation=share(useful),
        padding_share=share(padding),
        idle_share=share(slot_steps - useful - padding - chunk_cells),
        avg_latency=_mean(latency),
        p50_latency=_percentile(latency, 50),
        p90_latency=_percentile(latency, 90),
        p99_latency=_percentile(latency, 99),
        avg_wait=_mean(wait),
        avg_latency_all=_mean(latency_all),
        p99_latency_all=_percentile(latency_all, 99),
        drain_steps=run.drain,
        throughput=total_tokens / run.drain if run.drain else 0.0,
    )


@dataclass(frozen=True)
class Comparison:
    """Static against continuous on the same traffic and slots."""

    static: Metrics
    continuous: Metrics

    @property
    def drain_ratio(self) -> float:
        """Return static drain / continuous drain (how many times faster continuous empties the queue)."""
        return self.static.drain_steps / self.continuous.drain_steps if self.continuous.drain_steps else 1.0

    @property
    def throughput_ratio(self) -> float:
        """Return continuous throughput / static throughput."""
        return self.continuous.throughput / self.static.throughput if self.static.throughput else 1.0

    @property
    def utilisation_ratio(self) -> float:
        """Return continuous utilisation / static utilisation."""
        s, c = self.static.utilisation, self.continuous.utilisation
        return c / s if s else 1.0

    def as_dict(self) -> dict:
        """Return the CLI's `compare --json` object."""
        return {
            "static": self.static.as_dict(),
            "continuous": self.continuous.as_dict(),
            "ratios": {
                "drain": self.drain_ratio,
                "throughput": self.throughput_ratio,
                "utilisation": self.utilisation_ratio,
            },
        }


def compare(static: Run, continuous: Run, window: int | None = None) -> Comparison:
    """Return static vs continuous on the same traffic, over `window` steps (default: each over its own drain)."""
    if static.requests != continuous.requests or static.slots != continuous.slots:
        raise ValueError("compare needs two runs of the same requests on the same number of slots")
    return Comparison(compute_metrics(static, window), compute_metrics(continuous, window))


def weighted_percentiles(values: np.ndarray, weights: np.ndarray, qs: tuple[float, ...]) -> tuple[float, ...]:
    """Return percentiles of `values` where value i counts `weights[i]` times (the lower value at a tie)."""
    if not len(values) or weights.sum() == 0:
        return tuple(0.0 for _ in qs)
    order = np.argsort(values, kind="stable")
    cumulative = np.cumsum(weights[order])
    total = cumulative[-1]
    return tuple(float(values[order][np.searchsorted(cumulative, q / 100 * total)]) for q in qs)
