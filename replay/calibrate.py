"""Measure a model's forward-pass times over rows, prefill tokens and context: the profile a fitted cost model reads."""

from __future__ import annotations

import statistics
import time
from collections.abc import Callable

import numpy as np
import torch

from core.cost import Fitted
from core.kv_blocks import BlockAllocator
from core.ragged import build_batch
from core.sequence import Sequence

from .attention import PagedKVCache, RaggedPagedAttention
from .engine import BLOCK_SIZE, Engine, _sync

# The grid: decoding rows, prompt tokens prefilled beside them, and cached tokens read in all (split evenly).
ROWS = (1, 4, 16, 64)
PREFILL = (0, 128, 512)
CONTEXT = (0, 1024, 4096)  # one row may hold all of it: within the models' 8,192 positions
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
    """Return the median milliseconds of one ragged, paged forward pass of that shape on the engine's device."""
    config = engine.model.config
    seqs = _sequences(rows, prefill, context, config.vocab_size)
    blocks = sum(-(-s.num_tokens // BLOCK_SIZE) for s in seqs)
    allocator = BlockAllocator(blocks, BLOCK_SIZE)
    for s in seqs:
        allocator.allocate(s)  # the cache's values are zeros: a pass's time does not depend on them
    cache = PagedKVCache(config, blocks, BLOCK_SIZE, engine.device, engine.dtype)
    batch = build_batch(seqs, BLOCK_SIZE)
    tokens = torch.as_tensor(batch.token_ids, device=engine.device)
    positions = torch.as_tensor(batch.positions, device=engine.device)
    last = torch.as_tensor(batch.last_token_index, device=engine.device)
    times = []
    with torch.inference_mode():
        for k in range(repeats + 1):
            _sync(engine.device)
            t0 = time.perf_counter()
            attention = RaggedPagedAttention(cache, batch, engine.device)
            engine.model.logits(engine.model(tokens, positions, attention)[last])
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
