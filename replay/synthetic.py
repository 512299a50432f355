"""Synthetic passes of a chosen shape (rows, prefill, context): calibrate times them, the engine's warm-up runs them."""

from __future__ import annotations

import statistics
import time
from collections.abc import Callable

import numpy as np
import torch

from core.batch.kv_blocks import BlockAllocator
from core.batch.sequence import Sequence
from core.sched.policies import get_policy

from .attention import PagedKVCache

# replay.engine.Engine, handed in: the engine imports this module, so this one never imports the engine.
Engine = object

REPEATS = 3  # the median of three timed passes, after one warm-up
LONG_PASS_MS = 50.0  # a pass this long is timed once after its warm-up
SPIN_MS = 2.0  # the last stretch of an online wait is spun, not slept: a sleep may overshoot by a scheduler tick
# Idle gaps the wake is timed after: a long one (its full cost) and a short one (how fast it builds up). Measured on
# `tiny` (2026-12-03): a pass after 1 ms of spinning costs what it costs warm, after 3 ms (1 ms asleep) 0.2-0.6 ms
# more, after 10 ms or more 0.9-1.4 ms more, whatever the pass.
WAKE_GAPS_MS = (5.0, 40.0)
WAKE_REPEATS = 7


def shape_sequences(rows: int, prefill: int, context: int, vocab: int) -> list[Sequence]:
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
    config, block_size = engine.model.config, engine.block_size
    # One cache for every repeat, as a replay's cache lives across its passes: a freshly allocated one is slower
    # on first touch (measured: 5.6 against 3.7 ms for a dense decode pass of 8 rows on `small`).
    # And blocks laid out as a replay leaves them: its decoding sequences append a block each every 16 tokens, in
    # turn, so one sequence's blocks lie about a batch apart, not side by side (measured: side by side, the profile
    # ran 9-12% under the replay's passes on `tiny`; shuffled over a replay-sized pool, 14-35% over on `small`).
    shape = shape_sequences(rows, prefill, context, config.vocab_size)  # a pass mutates its sequences: new ones
    n, per_seq = len(shape), max(-(-(s.num_tokens + 1) // block_size) for s in shape)
    interleaved = [j + i * n for j in range(n) for i in range(per_seq)]  # sequence j's i-th block: n apart
    allocator = BlockAllocator(per_seq * n, block_size)
    cache = PagedKVCache(config, per_seq * n, block_size, engine.device, engine.dtype)

    def one_pass():
        allocator.reset(interleaved)  # every repeat starts from the same layout
        seqs = shape_sequences(rows, prefill, context, config.vocab_size)
        for s in seqs:
            allocator.allocate(s)  # the cache's values do not matter: a pass's time does not depend on them
        return lambda: engine.ragged_pass(cache, allocator, seqs, [None] * len(seqs))  # greedy rows never draw

    return median_ms(engine, one_pass, repeats)


# Passes a calibrate batch's dense cache holds beyond its prompt, so its cache is as wide as a replay's: a static
# batch's cache holds its padded prompt and its longest output, and in gpu-check's chat workload a batch of 64 (the
# workload's 256 requests, 64 slots) has a median longest output of ~460 tokens (8 slots: ~170).
BATCH_PASSES = 512


def time_dense_pass(engine: Engine, rows: int, prefill: int, context: int, slots: int, repeats: int = REPEATS) -> float:
    """Return the median ms of one static pass as the simulator describes it.

    A prompt pass of `prefill` tokens over `rows` rows (min(slots, prefill) when `rows` is 0), its cache made in the
    pass as online; or a decode column of `rows` rows over `context` cached tokens in all, a new key length each
    repeat as a static batch decodes (centred on context / rows).
    """
    if prefill:
        return median_ms(engine, _dense_prompt(engine, max(1, min(rows or slots, prefill)), prefill), repeats)
    return median_ms(engine, _dense_columns(engine, rows, max(2, context // rows), repeats), repeats)


def _dense_prompt(engine: Engine, rows: int, prefill: int) -> Callable[[], Callable[[], object]]:
    """Return a `prepare` for a prompt pass: a fresh rectangle of rows x prefill / rows tokens and its cache."""
    vocab, width = engine.model.config.vocab_size, prefill // rows
    rng = np.random.default_rng(0)

    def one_pass():
        fresh = [Sequence(str(i), i, rng.integers(0, vocab, width).tolist(), width, 2) for i in range(rows)]
        return lambda: engine.dense_pass(engine.new_batch(fresh, BATCH_PASSES), [True] * rows, [None] * rows)

    return one_pass


def _dense_columns(engine: Engine, rows: int, keys: int, repeats: int) -> Callable[[], Callable[[], object]]:
    """Return a `prepare` for decode columns of one batch, each pass one key longer, the timed ones centred on `keys`.

    A static batch reads one more key every pass, so a backend that plans per shape pays in every one of them; a
    profile timed at one key length again and again never paid it (issue 46). The batch lives across the repeats.
    """
    before = max(1, keys - 1 - (repeats + 1) // 2)  # prompt columns: the warm-up reads before + 1 keys
    seqs = [Sequence(str(i), i, [1] * before, before, BATCH_PASSES) for i in range(rows)]
    batch = engine.new_batch(seqs, BATCH_PASSES)
    batch.column = before  # as if the prompt had been computed (zeros in the cache time the same)
    return lambda: lambda: engine.dense_pass(batch, [True] * rows, [None] * rows)


def idle(engine: Engine, ms: float) -> None:
    """Wait `ms` as the online replay waits for an arrival: asleep, then spinning for the last SPIN_MS."""
    until = engine.clock() + ms / 1e3
    while (left := (until - engine.clock()) * 1e3) > 0:
        if left > SPIN_MS:
            time.sleep(min(left - SPIN_MS, 50.0) / 1e3)


def time_wake(engine: Engine, path: str) -> tuple[float, float]:
    """Return (wake_ms, wake_gap_ms): a prompt pass's cost beyond warm after an idle gap, and the gap that costs it all.

    A shorter idle costs in proportion. The pass is one 64-token prompt, alone: what a light load's newcomer finds
    when it wakes an idle engine. The profile's own passes run back to back, so without this the simulator prices
    every wake-up as a warm pass.
    """
    vocab = engine.model.config.vocab_size
    if path == "ragged":
        allocator = BlockAllocator(8, engine.block_size)
        cache = PagedKVCache(engine.model.config, 8, engine.block_size, engine.device, engine.dtype)

        def one_pass():
            allocator.reset()
            seqs = shape_sequences(0, 64, 0, vocab)
            allocator.allocate(seqs[0])
            return lambda: engine.ragged_pass(cache, allocator, seqs, [None])
    else:

        def one_pass():
            fresh = [Sequence("0", 0, list(range(1, 65)), 64, 2)]
            return lambda: engine.dense_pass(engine.new_batch(fresh, 64), [True], [None])

    warm = median_ms(engine, one_pass, WAKE_REPEATS)
    after = {}
    with torch.inference_mode():
        for gap in WAKE_GAPS_MS:
            times = []
            for _ in range(WAKE_REPEATS):
                run = one_pass()
                idle(engine, gap)
                t0 = engine.clock()
                run()
                times.append((engine.clock() - t0) * 1e3)
            after[gap] = max(statistics.median(times) - warm, 0.0)
    short, full = WAKE_GAPS_MS
    wake = after[full]
    if wake <= 0:
        return 0.0, full
    gap = short * wake / after[short] if after[short] > 0 else full
    return round(wake, 4), round(min(max(gap, short), full), 2)


def median_ms(engine: Engine, prepare: Callable[[], Callable[[], object]], repeats: int) -> float:
    """Return the median ms of `repeats` runs of what `prepare` returns, after one untimed run that warms up.

    A pass whose warm-up took LONG_PASS_MS or more is timed once: its noise is a small share of it, and three
    repeats of the longest rectangles would double calibrate's time.
    """
    times = []
    with torch.inference_mode():
        k = 0
        while k <= repeats:
            run = prepare()
            t0 = engine.clock()
            run()
            took = (engine.clock() - t0) * 1e3
            if k:  # the first pass warms caches and kernels
                times.append(took)
            elif took >= LONG_PASS_MS:
                k = repeats - 1
            k += 1
    return statistics.median(times)


def warm_up(engine: Engine, policy: str, slots: int) -> None:
    """Run a few untimed passes of the policy's path (a fresh engine's first passes run cold, and slow)."""
    rows = min(slots, 8)
    if not get_policy(policy).forms_batches:
        time_pass(engine, rows, 64, rows * 128, repeats=2)
    else:
        time_dense_pass(engine, 0, rows * 64, 0, rows, repeats=2)
        time_dense_pass(engine, rows, 0, rows * 128, rows, repeats=2)
