"""The app's state: the inputs (param, with bounds and docs) and both runs derived from them on the same traffic."""

from __future__ import annotations

from functools import lru_cache

import param

from core import Request, Run, TrafficConfig, generate, simulate
from core.metrics import Comparison, compare
from core.traffic import LENGTH_KINDS

# Runs are immutable and the same inputs give the same runs, so every session on this server shares them: a class
# opening the default page computes it once, not once per learner.
RUN_CACHE_SIZE = 512


@lru_cache(maxsize=RUN_CACHE_SIZE)
def _generated(config: TrafficConfig) -> tuple[Request, ...]:
    return tuple(generate(config))


@lru_cache(maxsize=RUN_CACHE_SIZE)
def shared_runs(traffic: TrafficConfig | tuple[Request, ...], slots: int, timeout: int) -> tuple[Run, Run]:
    """Return (static, continuous) for a generator config or a tuple of requests; shared by every session."""
    requests = _generated(traffic) if isinstance(traffic, TrafficConfig) else traffic
    return simulate(requests, slots, "static", timeout), simulate(requests, slots, "continuous")


class SimState(param.Parameterized):
    """Everything the learner chooses; `runs` holds static and continuous on exactly the traffic shown."""

    mode = param.Selector(default="continuous", objects=["continuous", "static"], doc="Batching mode shown")
    slots = param.Integer(default=4, bounds=(1, 64), doc="Batch slots (the slider offers 1-16; a URL may ask up to 64)")
    seed = param.Integer(default=4, bounds=(0, 99), doc="Traffic seed")
    requests = param.Integer(default=12, bounds=(1, 1000), doc="Number of requests (slider 1-64; URL up to 1000)")
    lengths = param.Selector(default="heavy", objects=list(LENGTH_KINDS), doc="Output length distribution")
    mean_tokens = param.Integer(
        default=TrafficConfig.mean_tokens,
        bounds=(1, TrafficConfig.max_tokens),
        doc="Mean output length in tokens: the load (lengths are capped at the generator's cap)",
    )
    arrival_window = param.Integer(default=18, bounds=(1, 512), doc="Requests arrive over steps 0..N-1")
    batch_timeout = param.Integer(default=0, bounds=(0, 64), doc="Static: steps the oldest request may wait")
    window = param.Integer(default=64, bounds=(8, 4096), doc="Steps shown and measured")
    step = param.Integer(default=64, bounds=(0, 4096), doc="Playback position (steps run so far)")
    both = param.Boolean(default=True, doc="Also draw the other mode's timeline, on the same time axis")
    trace = param.List(default=None, allow_None=True, item_type=Request, doc="Uploaded requests (None: generator)")
    trace_name = param.String(default="", doc="Name of the uploaded trace")

    static_run = param.ClassSelector(class_=Run, doc="Static batching on the traffic shown")
    continuous_run = param.ClassSelector(class_=Run, doc="Continuous batching on the traffic shown")

    def __init__(self, **params):
        super().__init__(**params)
        self._recompute()

    def traffic_key(self, trace: list[Request] | None = None) -> TrafficConfig | tuple[Request, ...]:
        """Return what decides the traffic shown: the uploaded requests, or the generator's config."""
        trace = self.trace if trace is None else trace
        if trace is not None:
            return tuple(trace)
        return TrafficConfig(
            seed=self.seed,
            requests=self.requests,
            lengths=self.lengths,
            arrival_window=self.arrival_window,
            mean_tokens=self.mean_tokens,
        )

    def traffic(self) -> list[Request]:
        """Return the requests shown: the uploaded trace, or the seeded generator's."""
        return list(self.static_run.requests)

    def use_trace(self, requests: list[Request], name: str) -> None:
        """Show an uploaded trace; both runs are computed first, so a failure leaves everything as it was."""
        shared_runs(self.traffic_key(requests), self.slots, self.batch_timeout)  # raises before anything changes
        self.param.update(trace=list(requests), trace_name=name)

    @param.depends(
        "slots", "seed", "requests", "lengths", "mean_tokens", "arrival_window", "batch_timeout", "trace", watch=True
    )
    def _recompute(self) -> None:
        static, continuous = shared_runs(self.traffic_key(), self.slots, self.batch_timeout)
        with param.parameterized.batch_call_watchers(self):
            self.static_run, self.continuous_run = static, continuous

    @param.depends("window", watch=True, on_init=True)
    def _clamp_step(self) -> None:
        self.param.step.bounds = (0, self.window)
        if self.step > self.window:
            self.step = self.window

    @property
    def run(self) -> Run:
        """Return the run of the mode shown."""
        return self.static_run if self.mode == "static" else self.continuous_run

    @property
    def other_run(self) -> Run:
        """Return the run of the mode not shown (drawn beneath it when `both` is on)."""
        return self.continuous_run if self.mode == "static" else self.static_run

    def comparison(self) -> Comparison:
        """Return static vs continuous, each measured over the window shown."""
        return compare(self.static_run, self.continuous_run, self.window)
