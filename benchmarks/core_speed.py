"""Event-driven schedulers against the chapter's per-step loop, on 100,000 heavy-tailed requests and real traces."""

from __future__ import annotations

import argparse
import time
from pathlib import Path

from core import TrafficConfig, generate, simulate
from core.chapter.reference import simulate_per_step
from core.clock.cost import UnitCost
from core.clock.hardware import cost_model
from core.sched.timed import simulate_timed
from core.workload.traces import load_trace

TRACES = Path(__file__).resolve().parents[2] / "shared" / "traces"
# Chat-shaped (compare's lengths: mean 64 tokens, capped at 1024), arriving at ~90% of 64 slots' capacity.
SYNTHETIC = TrafficConfig(
    seed=4, requests=100_000, arrivals="poisson", rate=0.9, mean_tokens=64, max_tokens=1024, tail=1.1
)


def _best_of(fn, repeats: int) -> float:
    best = float("inf")
    for _ in range(repeats):
        t0 = time.perf_counter()
        fn()
        best = min(best, time.perf_counter() - t0)
    return best


def _both(sim, requests, slots: int) -> None:
    for policy in ("static", "continuous"):
        sim(requests, slots, policy)


def main(argv: list[str]) -> None:
    """Print seconds for both policies, event-driven vs per-step, and their ratio."""
    p = argparse.ArgumentParser(prog="./dev bench core", description=__doc__)
    p.add_argument("--full", action="store_true", help="also time the per-step loop on the real traces (default off)")
    full = p.parse_args(argv).full
    slots = 64
    requests = generate(SYNTHETIC)
    fast = _best_of(lambda: _both(simulate, requests, slots), 5)
    slow = _best_of(lambda: _both(simulate_per_step, requests, slots), 1)
    print(f"synthetic: {len(requests):,} heavy-tailed requests (Poisson 0.9/step, mean 64 tokens), {slots} slots")
    print(f"  {'both policies':<22}{'event-driven s':>15}{'per-step s':>12}{'speedup':>9}")
    print(f"  {'':<22}{fast:>15.3f}{slow:>12.2f}{slow / fast:>8.0f}x")
    # On a clock: the same workload with each arrival step 5 ms, every pass costed (aim: roofline <= 3x unit steps).
    timed = [r.__class__(r.id, r.arrival * 5, r.output_tokens, r.prompt_tokens) for r in requests]
    roofline = cost_model()
    clock_unit = _best_of(lambda: _both(lambda q, s, p: simulate_timed(q, s, p, UnitCost()), timed, slots), 3)
    clock_roof = _best_of(lambda: _both(lambda q, s, p: simulate_timed(q, s, p, roofline), timed, slots), 3)
    print(f"  {'on a clock, both':<22}{'unit s':>15}{'roofline s':>12}{'roofline / steps':>18}")
    print(f"  {'':<22}{clock_unit:>15.3f}{clock_roof:>12.3f}{clock_roof / fast:>17.2f}x")
    for name in ("conv", "code"):
        path = TRACES / f"AzureLLMInferenceTrace_{name}.csv"
        if not path.exists():
            print(f"{path}: not found; skipping the real trace")
            continue
        trace = load_trace(path)
        t_fast = _best_of(lambda trace=trace: _both(simulate, trace, slots), 5)
        t_slow = _best_of(lambda trace=trace: _both(simulate_per_step, trace, slots), 1) if full else None
        slow_text = f"{t_slow:>12.2f}{t_slow / t_fast:>8.0f}x" if t_slow else f"{'(--full)':>12}"
        print(f"  Azure {name} ({len(trace):,} requests, 50 ms/step): event-driven {t_fast:.3f} s {slow_text}")
