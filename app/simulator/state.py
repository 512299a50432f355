"""The app's state: the inputs (param, with bounds and docs) and each mode's run derived from them on one traffic."""

from __future__ import annotations

from dataclasses import replace

import param

from app.page.runs import arrival_step_ms
from app.server.byte_cache import byte_cache
from core import Request, Run, TrafficConfig, generate
from core.batch.step_batch import BLOCK_SIZE as STEP_BLOCK_SIZE
from core.clock.hardware import ACCELERATORS, DEFAULT_ACCELERATOR, DEFAULT_MODEL_SHAPE, MODEL_SHAPES, cost_model
from core.kv.memory import ALLOCATIONS, MAX_KV_BLOCKS, MemoryConfig
from core.measure.metrics import Comparison, compare
from core.sched.engine import MAX_RECORDED_BLOCKS, as_run, schedule
from core.sched.fits import smallest_pool
from core.sched.policies import CHAPTER_PAIR, REGISTRY, get_policy
from core.sched.timed import TimedRun, simulate_timed
from core.workload.traffic import LENGTH_KINDS

# Runs are immutable and the same inputs give the same runs, so every session on this server shares them: a class
# opening the default page computes it once, not once per learner. Caches are bounded in bytes (server/byte_cache.py).
# Traces a generator setting replaces when moved (the chapter's opening traffic); other traces hide those settings.
CHAPTER_NAME = "the chapter's traffic"
GENERATOR_TAKES_OVER = {CHAPTER_NAME}
GENERATOR_PARAMS = ("seed", "requests", "lengths", "mean_tokens", "arrival_window", "priority_share")
# The simulator's policies, keys of `SimState.runs`: the registered policies that say they are a simulator mode (the
# Memory tab teaches chunked prefill with its budget). Static and continuous first: the chapter's pair.
MODES = tuple(name for name, policy in REGISTRY.items() if policy.simulator_mode)
MODE_ORDER = (*reversed(CHAPTER_PAIR), *(m for m in MODES if m not in CHAPTER_PAIR))  # the buttons: continuous first
# Tokens per KV block in the simulator's pool: the batch view's block tables' size, so the page has one block size.
BLOCK_SIZE = STEP_BLOCK_SIZE
MAX_POOL = MAX_RECORDED_BLOCKS  # the largest limited pool the simulator draws block by block
# The clock view sends every forward pass to the browser (its time, rows and prefill): at most this many per run,
# checked on the step runs before any clock run is computed.
MAX_CLOCK_PASSES = 50_000


@byte_cache(share=0.05)
def _generated(config: TrafficConfig) -> tuple[Request, ...]:
    return tuple(generate(config))


def requests_of(traffic: TrafficConfig | tuple[Request, ...]) -> tuple[Request, ...]:
    """Return the requests of a generator config (cached, shared by sessions) or of a tuple of requests."""
    return _generated(traffic) if isinstance(traffic, TrafficConfig) else traffic


def least_pool(traffic: TrafficConfig | tuple[Request, ...], allocation: str = "paged") -> int:
    """Return the smallest pool (blocks) every request of the traffic fits in, under every mode shown."""
    requests, memory = requests_of(traffic), MemoryConfig(block_size=BLOCK_SIZE, allocation=allocation)
    return max(smallest_pool(requests, memory, policy) for policy in MODES)


def pool_memory(traffic: TrafficConfig | tuple[Request, ...], kv_blocks: int, allocation: str) -> MemoryConfig:
    """Return the pool the runs use: `kv_blocks` blocks (raised to the least that fits), or 0 for unlimited.

    Unlimited is a pool nobody can exhaust (every request at its largest at once), so each run still counts the
    blocks it holds at every step while deciding exactly what an unlimited pool decides.
    """
    requests = requests_of(traffic)
    if kv_blocks:
        blocks = max(kv_blocks, least_pool(traffic, allocation))
    else:
        room = MemoryConfig(block_size=BLOCK_SIZE, allocation=allocation)
        # Never more than the core allows: an upload's tokens are bounded (app/page/upload.py) so that this many blocks
        # still hold every request at once, and first-fit never places a run past the sum of all runs.
        blocks = min(max(len(requests), 1) * least_pool(traffic, allocation) + room.blocks_for(1), MAX_KV_BLOCKS)
    return MemoryConfig(kv_blocks=blocks, block_size=BLOCK_SIZE, allocation=allocation)


@byte_cache(share=0.38)
def shared_runs(
    traffic: TrafficConfig | tuple[Request, ...],
    slots: int,
    timeout: int,
    kv_blocks: int = 0,
    allocation: str = "paged",
) -> dict[str, Run]:
    """Return each mode's run (policy -> Run) for a traffic and a KV pool (0: unlimited); shared by every session."""
    requests, memory = requests_of(traffic), pool_memory(traffic, kv_blocks, allocation)
    return {
        policy: as_run(
            schedule(
                requests,
                slots,
                policy,
                memory,
                batch_timeout=timeout if get_policy(policy).has_timeout else 0,
                # Each block's owner is kept for a pool the views draw box by box; a larger one (a long upload's
                # least pool) runs without the map, and the views say the pool is too big to draw.
                record_pool=bool(kv_blocks) and memory.kv_blocks <= MAX_POOL,
            )
        )
        for policy in MODES
    }


def generated_label(requests: int, lengths: str, priority_share: int = 0) -> str:
    """Return the words naming generated traffic (its seed is the slider beside them)."""
    classes = f", each high priority with a {priority_share}% chance" if priority_share else ""
    return f"Traffic: generated, {requests} requests, {lengths} lengths{classes}"


@byte_cache(share=0.25)
def shared_timed_runs(
    traffic: TrafficConfig | tuple[Request, ...], slots: int, timeout: int, accelerator: str, model: str
) -> dict[str, TimedRun]:
    """Return each mode's run on a clock under a roofline preset (policy -> TimedRun), arrivals as `arrival_step_ms`."""
    requests = requests_of(traffic)
    step = arrival_step_ms(accelerator, model)
    timed = [replace(r, arrival=round(r.arrival * step)) for r in requests]
    cost = cost_model(accelerator, model)
    return {
        policy: simulate_timed(timed, slots, policy, cost, timeout * step if get_policy(policy).has_timeout else 0.0)
        for policy in MODES
    }


class SimState(param.Parameterized):
    """Everything the learner chooses; `runs` holds static and continuous on exactly the traffic shown."""

    mode = param.Selector(default="continuous", objects=list(MODES), doc="Batching policy shown")
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
    priority_share = param.Integer(
        default=0, bounds=(0, 100), doc="Requests in the high priority class (priority 0), %; the rest are class 1"
    )
    batch_timeout = param.Integer(default=0, bounds=(0, 64), doc="Static: steps the oldest request may wait")
    window = param.Integer(default=64, bounds=(8, 4096), doc="Steps shown and measured")
    step = param.Integer(
        default=63, bounds=(0, 4095), doc="The pass at the cursor: step t (0-based); the figures count steps 0..t"
    )
    both = param.Boolean(default=True, doc="Also draw the other mode's timeline, on the same time axis")
    clock = param.Selector(default="steps", objects=["steps", "ms"], doc="Time axis: one column per step, or ms")
    accelerator = param.Selector(default=DEFAULT_ACCELERATOR, objects=list(ACCELERATORS), doc="On a clock: the GPU")
    model_shape = param.Selector(default=DEFAULT_MODEL_SHAPE, objects=list(MODEL_SHAPES), doc="On a clock: the model")
    trace = param.List(default=None, allow_None=True, item_type=Request, doc="Uploaded requests (None: generator)")
    trace_name = param.String(default="", doc="Name of the uploaded trace")
    kv_blocks = param.Integer(
        default=0, bounds=(0, MAX_POOL), doc=f"KV pool in blocks of {BLOCK_SIZE} tokens (0: unlimited)"
    )
    allocation = param.Selector(default="paged", objects=list(ALLOCATIONS), doc="How requests take KV blocks")

    runs = param.Dict(doc="Each mode's run on the traffic shown, on one KV pool: policy -> Run")
    refusal = param.String(default="", doc="Why a setting was just refused (the page shows it), or empty")

    def __init__(self, **params):
        super().__init__(**params)
        self._recompute()
        self._bound_clock()

    def traffic_key(self, trace: list[Request] | None = None) -> TrafficConfig | tuple[Request, ...]:
        """Return what decides the traffic shown: the uploaded requests, or the generator's config."""
        trace = self.trace if trace is None else trace
        if trace is not None:
            return tuple(trace)
        return self.generator_config(self.seed)

    def generator_config(self, seed: int) -> TrafficConfig:
        """Return the generator's config at `seed` with the rest of the learner's traffic settings."""
        return TrafficConfig(
            seed=seed,
            requests=self.requests,
            lengths=self.lengths,
            arrival_window=self.arrival_window,
            mean_tokens=self.mean_tokens,
            high_priority_share=self.priority_share / 100,
        )

    @property
    def generator_applies(self) -> bool:
        """Return whether the generator's settings (seed, requests, lengths...) shape the traffic shown."""
        return self.trace is None or self.trace_name in GENERATOR_TAKES_OVER

    def traffic(self) -> list[Request]:
        """Return the requests shown: the uploaded trace, or the seeded generator's."""
        return list(self.runs["continuous"].requests)

    def use_trace(self, requests: list[Request], name: str) -> None:
        """Show an uploaded trace; every run is computed first, so a failure leaves everything as it was."""
        shared_runs(self.traffic_key(requests), self.slots, self.batch_timeout, self.kv_blocks, self.allocation)
        self.param.update(trace=list(requests), trace_name=name)

    def traffic_label(self) -> str:
        """Return which traffic is shown, in words, for beside the seed: the chapter's, a trace's, or generated."""
        n = len(self.runs["continuous"].requests)
        if self.trace is not None:
            # The seed control stays beside it: say what it does here (a learner read "Traffic seed 4" as this one's).
            seed = "a new seed generates traffic" if self.generator_applies else "the seed is not used"
            return f"Traffic: {self.trace_name or 'a trace'}, {n} requests ({seed})"
        return generated_label(n, self.lengths, self.priority_share)

    @property
    def pool(self) -> int | None:
        """Return the pool the runs use, in blocks (the learner's, raised to the least that fits), or None."""
        return self.runs["continuous"].schedule.memory.kv_blocks if self.kv_blocks else None

    @param.depends(
        "slots",
        "seed",
        "requests",
        "lengths",
        "mean_tokens",
        "arrival_window",
        "batch_timeout",
        "trace",
        "kv_blocks",
        "allocation",
        watch=True,
    )
    def _recompute(self) -> None:
        self.runs = shared_runs(self.traffic_key(), self.slots, self.batch_timeout, self.kv_blocks, self.allocation)

    @param.depends("runs", "clock", watch=True)
    def _bound_clock(self) -> None:
        # Registered before any view's watcher, so a view never asks for a clock run this long.
        passes = max(run.drain for run in self.runs.values())
        if self.clock == "ms" and passes > MAX_CLOCK_PASSES:
            self.refusal = (
                f"On {self.slots} slots this traffic takes {passes:,} steps to drain; the clock view draws at most "
                f"{MAX_CLOCK_PASSES:,} forward passes, so steps are shown (more slots, or fewer or shorter requests, "
                "fit on a clock)."
            )
            self.clock = "steps"

    @param.depends(*GENERATOR_PARAMS, watch=True)
    def _leave_fixed_traffic(self) -> None:
        # Moving a generator setting on the chapter's traffic means "show me generated traffic", not "do nothing".
        if self.trace_name in GENERATOR_TAKES_OVER:
            self.param.update(trace=None, trace_name="")

    @param.depends("window", watch=True, on_init=True)
    def _clamp_step(self) -> None:
        self.param.step.bounds = (0, self.window - 1)
        if self.step > self.window - 1:
            self.step = self.window - 1

    @property
    def run(self) -> Run:
        """Return the run of the mode shown."""
        return self.runs[self.mode]

    def timed_runs(self) -> dict[str, TimedRun]:
        """Return each mode's run on a clock under the chosen preset (policy -> TimedRun), on the traffic shown."""
        return shared_timed_runs(self.traffic_key(), self.slots, self.batch_timeout, self.accelerator, self.model_shape)

    def comparison(self) -> Comparison:
        """Return static vs continuous, each measured over the window shown."""
        return compare(self.runs["static"], self.runs["continuous"], window=self.window)
