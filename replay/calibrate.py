"""Measure a model's forward-pass times over rows, prefill tokens and context: the profile a fitted cost model reads."""

from __future__ import annotations

import statistics
import time
from collections import deque
from collections.abc import Callable

import numpy as np
import torch

from core.cost import Fitted
from core.kv_blocks import BlockAllocator
from core.sequence import Sequence

from .attention import PagedKVCache
from .engine import BLOCK_SIZE, Engine, _sync

# The grid: decoding rows, prompt tokens prefilled beside them, and cached tokens read in all (split evenly). Dense
# where a few slots' batches live: an online replay's passes fall between points and are interpolated, and the cost
# of a prompt is convex (attention is quadratic in it), so its axis is the finest.
ROWS = (0, 1, 2, 4, 8, 16, 64)
PREFILL = (0, 64, 128, 256, 512, 1024)
CONTEXT = (0, 512, 2048, 6144)  # one row may hold all of it: within the models' 8,192 positions
REPEATS = 3  # the median of three timed passes, after one warm-up
PATHS = ("ragged", "dense")  # continuous batching's ragged paged pass, or static batching's padded rectangle


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
    # One cache for every repeat, as a replay's cache lives across its passes: a freshly allocated one is slower
    # on first touch (measured: 5.6 against 3.7 ms for a dense decode pass of 8 rows on `small`).
    # And blocks laid out as a replay leaves them: its decoding sequences append a block each every 16 tokens, in
    # turn, so one sequence's blocks lie about a batch apart, not side by side (measured: side by side, the profile
    # ran 9-12% under the replay's passes on `tiny`; shuffled over a replay-sized pool, 14-35% over on `small`).
    shape = _sequences(rows, prefill, context, config.vocab_size)  # a pass mutates its sequences: new ones per repeat
    n, per_seq = len(shape), max(-(-(s.num_tokens + 1) // BLOCK_SIZE) for s in shape)
    interleaved = [j + i * n for j in range(n) for i in range(per_seq)]  # sequence j's i-th block: n apart
    allocator = BlockAllocator(per_seq * n, BLOCK_SIZE)
    cache = PagedKVCache(config, per_seq * n, BLOCK_SIZE, engine.device, engine.dtype)

    def one_pass():
        allocator.free_blocks = deque(interleaved)  # every repeat starts from the same layout
        allocator.owner[:] = -1
        seqs = _sequences(rows, prefill, context, config.vocab_size)
        for s in seqs:
            allocator.allocate(s)  # the cache's values do not matter: a pass's time does not depend on them
        return lambda: engine.ragged_pass(cache, allocator, seqs, [None] * len(seqs))  # greedy rows never draw

    return _median_ms(engine, one_pass, repeats)


def time_dense_pass(engine: Engine, rows: int, prefill: int, context: int, slots: int, repeats: int = REPEATS) -> float:
    """Return the median ms of one static pass as the simulator describes it.

    A prefill of `prefill` tokens spread over min(slots, prefill) rows, its cache made in the pass as online; or a
    decode column of `rows` rows over `context` cached tokens in all.
    """
    vocab = engine.model.config.vocab_size
    rng = np.random.default_rng(0)

    def one_pass():
        if prefill:
            b = max(1, min(slots, prefill))
            width = prefill // b
            fresh = [Sequence(str(i), i, rng.integers(0, vocab, width).tolist(), width, 2) for i in range(b)]
            # The batch's cache is made in its first pass; sized here for a typical batch's 64 passes.
            return lambda: engine.dense_pass(engine.new_batch(fresh, 64), [True] * b, [None] * b)
        for s in seqs:
            del s.token_ids[per_row - 1 :]
        batch.column = per_row - 1  # as if the prompt had been computed (zeros in the cache time the same)
        return lambda: engine.dense_pass(batch, [True] * rows, [None] * rows)

    if not prefill:  # one batch for every repeat: a static batch's cache lives across its passes
        per_row = max(2, context // rows)  # the column attends over per_row keys: the prompt and the tokens so far
        seqs = [Sequence(str(i), i, [1] * (per_row - 1), per_row - 1, 2) for i in range(rows)]
        batch = engine.new_batch(seqs, 2)

    return _median_ms(engine, one_pass, repeats)


def _median_ms(engine: Engine, prepare: Callable[[], Callable[[], object]], repeats: int) -> float:
    times = []
    with torch.inference_mode():
        for k in range(repeats + 1):
            run = prepare()
            _sync(engine.device)
            t0 = time.perf_counter()
            run()
            _sync(engine.device)
            if k:  # the first pass warms caches and kernels
                times.append((time.perf_counter() - t0) * 1e3)
    return statistics.median(times)


def _needed(path: str, r: int, p: int, c: int) -> bool:
    """Return whether the simulator ever asks for this grid point (the others are filled, additively)."""
    if path == "ragged":
        return r > 0 or c == 0 and p > 0  # no decoding rows: a prefill alone, with no cached context
    return (r == 0 and p > 0 and c == 0) or (r > 0 and p == 0)  # a prefill, or a decode column


def _points(path: str, rows=ROWS, prefill=PREFILL, context=CONTEXT) -> list[tuple[int, int, int]]:
    """Return the grid points a path measures, in the order they are measured."""
    return [(r, p, c) for r in rows for p in prefill for c in context if _needed(path, r, p, c)]


def calibrate(
    model: str = "small",
    device: str | None = "cpu",
    rows: tuple[int, ...] = ROWS,
    prefill: tuple[int, ...] = PREFILL,
    context: tuple[int, ...] = CONTEXT,
    on_point: Callable[[int, int], None] | None = None,
    threads: int = 1,
    path: str = "ragged",
    slots: int = 8,
) -> Fitted:
    """Return the measured profile of a replay model preset on a device, one grid point at a time.

    `path` "ragged" times continuous batching's pass; "dense" times static batching's rectangle, its prefill spread
    over `slots` rows. Points the simulator never asks for (a pass with nothing in it, say) are filled additively
    from measured ones, so interpolation near them stays sane.
    """
    if path not in PATHS:
        raise ValueError(f"path must be one of {', '.join(PATHS)}, got {path!r}")
    engine = Engine(model, device, threads=threads)
    points = _points(path, rows, prefill, context)
    measured = {}
    for done, (r, p, c) in enumerate(points, start=1):
        if path == "ragged":
            measured[r, p, c] = time_pass(engine, r, p, c)
        else:
            measured[r, p, c] = time_dense_pass(engine, r, p, c, slots)
        if on_point:
            on_point(done, len(points))
    grid = _fill(measured, rows, prefill, context)
    name = "fitted" if path == "ragged" else "fitted (static)"
    return Fitted(rows, prefill, context, grid, device=str(engine.device), model=model, name=name)


def _fill(measured: dict, rows, prefill, context) -> tuple:
    """Return the full grid: measured points as they are, the others as the nearest measured ones' costs added."""

    def at(r, p, c):
        if (r, p, c) in measured:
            return measured[r, p, c]
        r1 = rows[1] if r == rows[0] else r  # the nearest row count that holds decoding rows
        base = measured.get((r1, prefill[0], context[0])) or measured.get((r1, prefill[0], context[1]), 0.0)
        decode = measured.get((r1, prefill[0], c), base)
        prompt = measured.get((rows[0], p, context[0])) or measured.get((r1, p, context[0]), base)
        return max(decode + prompt - base, 0.01)

    return tuple(tuple(tuple(round(at(r, p, c), 4) for c in context) for p in prefill) for r in rows)


def profiles(model: str, device: str | None, slots: int = 8, on_point=None, threads: int = 1) -> dict[str, Fitted]:
    """Return both policies' profiles on this device: {"continuous": ragged, "static": dense}."""
    first, total = len(_points("ragged")), len(_points("ragged")) + len(_points("dense"))

    def progress(offset):  # one progress over both grids, the ragged first
        return (lambda k, _n: on_point(offset + k, total)) if on_point else None

    ragged = calibrate(model, device, on_point=progress(0), threads=threads)
    dense = calibrate(model, device, on_point=progress(first), threads=threads, path="dense", slots=slots)
    return {"continuous": ragged, "static": dense}
