"""The online replay: requests arrive on the wall clock and the core's timed schedulers decide from what has arrived.

`OnlineRunner` is a `core.sched.timed.PassRunner` whose clock is the wall clock and whose passes run the real model, so
`core.sched.timed.schedule_timed` (the simulator's scheduling code) makes every decision. What happened comes back as
a `TimedRun` with measured pass times, which the simulator's metrics and views read like any other.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np

from core import Request
from core.clock.cost import StepCost
from core.sched.policies import CHAPTER_PAIR
from core.sched.timed import TimedRun, schedule_timed, simulate_timed, timed_metrics

from . import Cancelled
from .engine import Engine
from .synthetic import SPIN_MS


@dataclass
class OnlineResult:
    """What an online replay did: the schedule on the wall clock, the model's time per pass, the tokens."""

    run: TimedRun
    device: str
    model: str
    model_ms: np.ndarray  # per pass: the model's forward and output head; the rest of the pass is overhead
    outputs: list[list[int]]

    @property
    def overhead_share(self) -> float:
        """Return the share of the passes' time outside the model: batch building, sampling, scheduling."""
        total = float(self.run.pass_ms.sum())
        return 1.0 - float(self.model_ms.sum()) / total if total else 0.0


class OnlineRunner:
    """A PassRunner on the wall clock: waits really wait, and every pass runs the engine's model."""

    def __init__(
        self,
        engine: Engine,
        requests: Sequence[Request],
        slots: int,
        on_pass: Callable[[int, int], None] | None = None,
        cancel: threading.Event | None = None,
    ):
        self.engine = engine
        self.seqs, self.generators = engine.sequences(requests)
        self.allocator, self.cache = engine.paged_cache(self.seqs, slots)
        self.running: dict[int, int] = {}  # slot -> request index
        self.model_ms: list[float] = []
        self.tokens, self.total_tokens = 0, sum(r.output_tokens for r in requests)
        self.on_pass, self.cancel = on_pass, cancel
        self.t0 = engine.clock()

    def now(self) -> float:
        """Return milliseconds since the replay began, once the device has finished its queued work."""
        return (self.engine.clock() - self.t0) * 1e3

    def wait(self, until_ms: float) -> float:
        """Sleep (then spin) until the wall clock reaches `until_ms`; return the clock."""
        while (left := until_ms - self.now()) > 0:
            self._check_cancel()
            if left > SPIN_MS:
                time.sleep(min(left - SPIN_MS, 50.0) / 1e3)  # short naps, so a cancel is seen within 50 ms
        return self.now()

    def on_admit(self, request: int, slot: int) -> None:
        """Give the newcomer its KV blocks; it joins the batch at the next pass."""
        self.allocator.allocate(self.seqs[request])
        self.running[slot] = request

    def on_retire(self, request: int) -> None:
        """Free a finished request's blocks; the engine must agree that it is finished."""
        seq = self.seqs[request]
        if not seq.is_finished:
            raise RuntimeError(f"the scheduler retired {seq.seq_id}, which the engine has not finished")
        self.allocator.free(seq)
        del self.running[next(s for s, i in self.running.items() if i == request)]

    def run_pass(self, rows: int, prefill: int, context: int, began_ms: float) -> float:
        """Run one ragged pass over the running requests, in slot order; return the clock at its end."""
        self._check_cancel()
        running = [self.seqs[self.running[s]] for s in sorted(self.running)]
        self.model_ms.append(self.engine.ragged_pass(self.cache, self.allocator, running, self.generators))
        return self._passed(len(running))

    def run_batch(self, members, rows, prefill, context, began_ms: float) -> np.ndarray:
        """Run a static batch's passes, finished members computed as padding; return each pass's end."""
        seqs = [self.seqs[i] for i in members]
        batch = self.engine.new_batch(seqs, len(rows))
        ends = np.empty(len(rows))
        for age in range(len(rows)):
            self._check_cancel()
            live = [age < s.max_new_tokens for s in seqs]
            self.model_ms.append(self.engine.dense_pass(batch, live, self.generators))
            ends[age] = self._passed(sum(live))
        return ends

    def _passed(self, tokens: int) -> float:
        end = self.now()
        self.tokens += tokens
        if self.on_pass:
            self.on_pass(self.tokens, self.total_tokens)
        return end

    def _check_cancel(self) -> None:
        if self.cancel is not None and self.cancel.is_set():
            raise Cancelled()


def replay_online(
    engine: Engine,
    requests: Sequence[Request],
    slots: int,
    policy: str,
    batch_timeout_ms: float = 0.0,
    on_pass: Callable[[int, int], None] | None = None,
    cancel: threading.Event | None = None,
) -> OnlineResult:
    """Replay `requests` (arrivals in ms from now) in real time; the core's timed scheduler decides every pass.

    `on_pass(tokens_done, tokens_total)` after each pass; a set `cancel` raises Cancelled between passes.
    """
    engine.check_fits(requests, slots)
    engine.warm_up(policy, slots)  # untimed: the profile it is compared with was taken warm
    runner = OnlineRunner(engine, requests, slots, on_pass, cancel)
    run = schedule_timed(list(requests), slots, policy, runner, batch_timeout_ms, f"measured ({engine.device})")
    outputs = [s.token_ids[s.num_prompt_tokens :] for s in runner.seqs]
    return OnlineResult(run, str(engine.device), engine.model_name, np.array(runner.model_ms), outputs)


FIGURES = (
    ("drain (ms)", lambda m: m.drain_ms),
    ("tokens/s", lambda m: m.tokens_per_s),
    ("TTFT p50 (ms)", lambda m: m.ttft_ms["p50"]),
    ("TTFT p99 (ms)", lambda m: m.ttft_ms["p99"]),
    ("inter-token p50 (ms)", lambda m: m.itl_ms["p50"]),
    ("inter-token p99 (ms)", lambda m: m.itl_ms["p99"]),
    ("end-to-end p50 (ms)", lambda m: m.e2e_ms["p50"]),
    ("end-to-end p99 (ms)", lambda m: m.e2e_ms["p99"]),
)


def format_error(error: float | None) -> str:
    """Return a prediction's error as a signed percentage ('–' where nothing was measured to compare with)."""
    return "–" if error is None else f"{error:+.1%}"


def predicted_vs_measured(measured: TimedRun, cost: StepCost) -> dict:
    """Return the simulator's prediction of the same workload under `cost` beside what was measured, per figure."""
    predicted = simulate_timed(measured.requests, measured.slots, measured.rules, cost, measured.batch_timeout_ms)
    pm, mm = timed_metrics(predicted), timed_metrics(measured)
    rows = {}
    for name, get in FIGURES:
        p, m = float(get(pm)), float(get(mm))
        rows[name] = {"predicted": p, "measured": m, "error": (p - m) / m if m else None}
    return {"policy": measured.policy, "figures": rows, "predicted_run": predicted}


def online_summary(results: dict[str, OnlineResult], costs: StepCost | dict[str, StepCost]) -> dict:
    """Return both policies' measured and predicted figures, the errors, speedups and overhead shares.

    `costs` predicts every policy, or maps each policy to its own profile (`replay.calibrate.profiles`).
    """
    doc = {"policies": {}}
    for policy, result in results.items():
        cost = costs[policy] if isinstance(costs, dict) else costs
        compared = predicted_vs_measured(result.run, cost)
        doc["policies"][policy] = {
            "figures": compared["figures"],
            "overhead_share": result.overhead_share,
            "passes": result.run.passes,
        }
    first = next(iter(results.values()))
    doc.update(
        device=first.device,
        model=first.model,
        slots=first.run.slots,
        requests=len(first.run.requests),
        cost=_cost_words(costs),
    )
    if set(CHAPTER_PAIR) <= set(results):
        tps = {p: doc["policies"][p]["figures"]["tokens/s"] for p in CHAPTER_PAIR}
        doc["measured_speedup"] = tps["continuous"]["measured"] / tps["static"]["measured"]
        doc["predicted_speedup"] = tps["continuous"]["predicted"] / tps["static"]["predicted"]
    return doc


PROFILE_WORDS = {"fitted": "its ragged passes timed", "fitted (static)": "its padded rectangles timed"}


def _cost_words(costs: StepCost | dict[str, StepCost]) -> str:
    """Return what predicted the policies, for the table's heading: one cost for all, or each policy's own profile."""
    if not isinstance(costs, dict):
        return f"the {costs.name} cost"
    if len({c.name for c in costs.values()}) == 1:
        return f"the {next(iter(costs.values())).name} cost"
    each = ", ".join(f"{p}: {PROFILE_WORDS.get(c.name, c.name)}" for p, c in costs.items())
    return f"each policy's own profile ({each})"


def online_text(doc: dict, workload: str) -> str:
    """Return the predicted-vs-measured table of an online summary (see `online_summary`)."""
    policies = list(doc["policies"])
    lines = [
        f"online replay on {doc['device']}, model {doc['model']}, {doc['slots']} slots; workload: {workload}",
        f"predicted by the simulator with {doc['cost']}, measured on this model and device",
        "",
        f"{'':24}" + "".join(f"{p + ' pred':>17}{'measured':>11}{'error':>8}" for p in policies),
    ]
    for name, _ in FIGURES:
        cells = []
        for p in policies:
            f = doc["policies"][p]["figures"][name]
            cells.append(f"{f['predicted']:>17,.1f}{f['measured']:>11,.1f}{format_error(f['error']):>8}")
        lines.append(f"{name:24}" + "".join(cells))
    lines.append("")
    share = ", ".join(f"{p} {doc['policies'][p]['overhead_share']:.1%}" for p in policies)
    lines.append(f"engine overhead (time outside the model's forward, share of the passes): {share}")
    if "measured_speedup" in doc:
        lines.append(
            f"speedup (tokens/s, continuous / static): measured {doc['measured_speedup']:.2f}x, "
            f"predicted {doc['predicted_speedup']:.2f}x"
        )
    return "\n".join(lines)
