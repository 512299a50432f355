"""Metrics of a Run over a window of steps, and a comparison of runs of several policies on the same traffic."""

from __future__ import annotations

from dataclasses import asdict, dataclass

import numpy as np

from core.sched.run import GENERATING, PADDING, PREFILL, RECOMPUTE, Run
from core.states import PAUSED


@dataclass(frozen=True)
class Metrics:
    """What a run achieved in steps [0, window); latencies in steps, shares as fractions of slot-steps.

    `avg_latency` and its percentiles count the requests completed in the window; `avg_latency_all` counts every
    request, measured to its finish past the window (docs/design.md, "Simulator semantics": the figure that compares
    modes).
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
        held = (cells[:, 4] == PREFILL) | (cells[:, 4] == PAUSED)  # a prompt chunk, or paused: held, not idle
        chunk_cells = _clipped_len(cells[held, 2], cells[held, 3], window)
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
    """Policies on the same traffic and slots: each one's metrics by policy name, the first the baseline."""

    metrics: dict[str, Metrics]  # policy name -> its metrics, in the order given

    def __getitem__(self, name: str) -> Metrics:
        return self.metrics[name]

    @property
    def names(self) -> tuple[str, ...]:
        """Return the policies compared, the baseline first."""
        return tuple(self.metrics)

    def ratios(self, name: str) -> dict[str, float]:
        """Return policy `name` against the baseline: drain (baseline / it), throughput, utilisation (it / baseline).

        A ratio whose denominator is 0 is 1.0.
        """
        base, it = self.metrics[self.names[0]], self.metrics[name]
        over = lambda a, b: a / b if b else 1.0  # noqa: E731
        return {
            "drain": over(base.drain_steps, it.drain_steps),
            "throughput": over(it.throughput, base.throughput),
            "utilisation": over(it.utilisation, base.utilisation),
        }

    @property
    def drain_ratio(self) -> float:
        """Return the baseline's drain / the second policy's (static / continuous: how much faster it empties)."""
        return self.ratios(self.names[1])["drain"]

    @property
    def throughput_ratio(self) -> float:
        """Return the second policy's throughput / the baseline's."""
        return self.ratios(self.names[1])["throughput"]

    @property
    def utilisation_ratio(self) -> float:
        """Return the second policy's utilisation / the baseline's."""
        return self.ratios(self.names[1])["utilisation"]

    def as_dict(self) -> dict:
        """Return the CLI's `compare --json` object: each policy's metrics by name and the ratios.

        `ratios` is the second against the first (continuous against static by default); `ratios_to_baseline` holds
        every policy's but the first's.
        """
        out: dict = {name: m.as_dict() for name, m in self.metrics.items()}
        out["ratios"] = self.ratios(self.names[1])
        out["ratios_to_baseline"] = {name: self.ratios(name) for name in self.names[1:]}
        return out


def compare(*runs: Run, window: int | None = None, names: tuple[str, ...] | None = None) -> Comparison:
    """Return runs of different policies on the same traffic compared, the first the baseline.

    Each is measured over `window` steps (default: each over its own drain) on its own slots (the same, but for an
    engine without a request cap: TGI runs every request that fits), and named `names` (default: each its policy's
    name; give names to compare one engine under two of its settings).
    """
    if len(runs) < 2:
        raise ValueError("compare needs at least two runs")
    if any(r.requests != runs[0].requests for r in runs):
        raise ValueError("compare needs runs of the same requests")
    names = names or tuple(r.policy for r in runs)
    if len(names) != len(runs) or len(set(names)) < len(runs):
        raise ValueError("compare needs runs of different policies")  # or a distinct name each
    return Comparison({name: compute_metrics(r, window) for name, r in zip(names, runs)})


def latency_by_class(runs) -> dict[int, tuple[int, list[float]]]:
    """Return, per priority class, its request count and each run's mean latency to finish; {} for one class."""
    priority = np.array([r.priority for r in runs[0].requests])
    classes = sorted(set(priority.tolist()))
    if len(classes) < 2:
        return {}
    return {
        c: (int((priority == c).sum()), [float((run.finish - run.arrival)[priority == c].mean()) for run in runs])
        for c in classes
    }


def latency_so_far(arrival, finish, t: float) -> float | None:
    """Return the mean time in the system by `t` of every request arrived by then (a finished one to its finish).

    The page's live latency: unlike the mean over the completed only, it cannot favour the policy that has finished
    fewer (static finishes its short requests first); once everyone has finished it is the mean to each finish.
    On steps, `t` is the number of steps run (step t - 1 is the cursor): a request arriving at step a counts from a.
    """
    total, arrived = 0.0, 0
    for a, f in zip(np.asarray(arrival).tolist(), np.asarray(finish).tolist()):
        if a < t:  # summed in request order, as the renderer sums it (app/web/renderer.js), for the same bits
            total += min(f, t) - a
            arrived += 1
    return total / arrived if arrived else None
