"""Measure a model's forward-pass times over rows, prefill tokens and context: the profile a fitted cost model reads."""

from __future__ import annotations

import statistics
import time
from collections.abc import Callable

import numpy as np
import torch

from core.cost import Fitted
from core.sequence import Sequence

from .engine import Engine, _sync

# The grid: decoding rows, prompt tokens prefilled beside them, and cached tokens read in all (split evenly). Dense
# where a few slots' batches live (an online replay's passes fall between points and are interpolated).
ROWS = (1, 2, 4, 8, 16, 32, 64)
PREFILL = (0, 64, 256, 1024)
CONTEXT = (0, 512, 2048, 6144)  # one row may hold all of it: within the models' 8,192 positions
REPEATS = 3  # the median of three timed passes, after one warm-up


def _sequences(rows: int, prefill: int, context: int, vocab: int) -> list[Sequence]:
    """Return `rows` decoding sequences sharing `context` cached tokens, plus one prefilling `prefill` tokens."""
    rng = np.random.default_rng(0)
    seqs = []
    per_row = [context // rows + (1 if i < context % rows else 0) for i in range(rows)]
    for i, cached in enumerate(per_row):
        tokens = rng.integers(0, vocab, size=cached + 1).tolist()
        seqs.append(
            Sequence(f"d{i}", i, tokens, num_prompt_tokens=cached + 1, max_new_tokens=1, num_computed_tokens=cached)
        )
    if prefill:
        tokens = rng.integers(0, vocab, size=prefill).tolist()
        seqs.append(Sequence("p", rows, tokens, num_prompt_tokens=prefill, max_new_tokens=1))
    return seqs


def time_pass(engine: Engine, rows: int, prefill: int, context: int, repeats: int = REPEATS) -> float:
    """Return the median ms of one whole engine pass of that shape (build, forward, sample): an online pass."""
    config = engine.model.config
    times = []
    with torch.inference_mode():
        for k in range(repeats + 1):
            seqs = _sequences(rows, prefill, context, config.vocab_size)
            allocator, cache = engine.paged_cache(seqs, len(seqs))
            for s in seqs:
                allocator.allocate(s)  # the cache's values are zeros: a pass's time does not depend on them
            generators = [None] * len(seqs)  # greedy rows never draw
            _sync(engine.device)
            t0 = time.perf_counter()
            engine.ragged_pass(cache, allocator, seqs, generators)
            _sync(engine.device)
            if k:  # the first pass warms caches and kernels
                times.append((time.perf_counter() - t0) * 1e3)
    return statistics.median(times)


def calibrate(
    model: str = "small",
    device: str | None = "cpu",
    rows: tuple[int, ...] = ROWS,
    prefill: tuple[int, ...] = PREFILL,
    context: tuple[int, ...] = CONTEXT,
    on_point: Callable[[int, int], None] | None = None,
    threads: int = 1,
) -> Fitted:
    """Return the measured profile of a replay model preset on a device, one grid point at a time."""
    engine = Engine(model, device, threads=threads)
    total, done = len(rows) * len(prefill) * len(context), 0
    grid = []
    for r in rows:
        plane = []
        for p in prefill:
            line = []
            for c in context:
                line.append(round(time_pass(engine, r, p, c), 4))
                done += 1
                if on_point:
                    on_point(done, total)
            plane.append(tuple(line))
        grid.append(tuple(plane))
    return Fitted(rows, prefill, context, tuple(grid), device=str(engine.device), model=model)
