"""The one loop (core.sched.engine) against the policies' fast loops on 100,000 requests, unlimited and tight."""

from __future__ import annotations

import argparse
from dataclasses import replace

from core import generate, simulate
from core.kv.memory import MemoryConfig
from core.sched.engine import schedule

from .core_speed import SYNTHETIC, _best_of


def main(argv: list[str]) -> None:
    """Print seconds for each case, its ratio to the fast path and to the engine's unlimited run, in one run."""
    p = argparse.ArgumentParser(prog="./dev bench memory", description=__doc__)
    p.add_argument("--repeats", type=int, default=3, help="best of this many runs per case (default 3)")
    p.add_argument("--slots", type=int, default=64, help="batch slots (default 64)")
    p.add_argument("--baseline", metavar="REF", help="time the engine's cases under this git ref too, side by side")
    args = p.parse_args(argv)
    if args.baseline:
        from .memory_baseline import compare

        compare(args.baseline, args.slots, args.repeats)
        return
    requests = generate(replace(SYNTHETIC, high_priority_share=0.3))  # two classes: the same arrivals and lengths
    slots = args.slots
    # A tight pool: 8 blocks of 16 tokens per slot, where a running request holds about 6 on average, so admissions
    # wait and growth preempts (tens of thousands of times); it still holds the largest request (check_fits).
    longest = max(max(1, r.prompt_tokens) + r.output_tokens for r in requests)
    tight = max(-(-longest // 16), slots * 8)
    cases = {
        "simulate (fast path), unlimited": lambda: simulate(requests, slots, "continuous"),
        "engine, unlimited": lambda: schedule(requests, slots, "continuous"),
        f"engine, paged pool of {tight:,} blocks": lambda: schedule(
            requests, slots, "continuous", MemoryConfig(kv_blocks=tight)
        ),
        f"engine, contiguous pool of {4 * tight:,} blocks": lambda: schedule(
            requests, slots, "continuous", MemoryConfig(kv_blocks=4 * tight, allocation="contiguous")
        ),
        "engine, chunked, budget 256": lambda: schedule(requests, slots, "chunked", token_budget=256),
        "engine, sjf, unlimited": lambda: schedule(requests, slots, "sjf"),
        f"engine, sjf, paged pool of {tight:,} blocks": lambda: schedule(
            requests, slots, "sjf", MemoryConfig(kv_blocks=tight)
        ),
        "engine, priority (two classes), unlimited": lambda: schedule(requests, slots, "priority"),
        f"engine, priority, paged pool of {tight:,} blocks": lambda: schedule(
            requests, slots, "priority", MemoryConfig(kv_blocks=tight)
        ),
    }
    print(f"{len(requests):,} requests (core_speed's synthetic traffic), {slots} slots, best of {args.repeats}")
    fast = engine = None
    for name, fn in cases.items():
        seconds = _best_of(fn, args.repeats)
        fast = fast or seconds
        # The aims: the engine's unlimited run near the fast path, a tight pool under 3x the engine's unlimited run.
        against_engine = f"   {seconds / engine:5.2f}x the engine unlimited" if engine else ""
        engine = engine or (seconds if name.startswith("engine") else None)
        print(f"  {name:<46} {seconds:7.3f} s   {seconds / fast:6.2f}x the fast path{against_engine}")
    s = schedule(requests, slots, "continuous", MemoryConfig(kv_blocks=tight))
    m = s.memory_metrics()
    print(
        f"  (the tight paged run: {m['preemptions']:,} preemptions, {m['recomputed_tokens']:,} tokens recomputed, "
        f"{sum(e.kind == 'blocked' for e in s.events):,} admissions waited)"
    )
