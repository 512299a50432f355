"""Measure a model's forward-pass times over rows, prefill tokens and context: the profile a fitted cost model reads."""

from __future__ import annotations

from collections.abc import Callable

from core.clock.cost import Fitted

from .engine import Engine
from .synthetic import time_dense_pass, time_pass, time_wake

# The grid: decoding rows, prompt tokens prefilled beside them, and cached tokens read in all (split evenly). Dense
# where a few slots' batches live: an online replay's passes fall between points and are interpolated, and the cost
# of a prompt is convex (attention is quadratic in it), so its axis is the finest.
ROWS = (0, 1, 2, 4, 8, 16, 64)
PREFILL = (0, 64, 128, 256, 512, 1024)
# Static's prompt pass is a rectangle of every row's padded prompt: 8 rows of chat prompts reach 5,000 tokens and
# more, where extrapolating from 1,024 priced it at half what it took (measured on `tiny`, 2026-12-03).
DENSE_PREFILL = (*PREFILL, 2048, 4096, 8192)
# Cached tokens read in all: 8 rows of long answers (or static's padded rows) read past 6,144, where extrapolating
# under-priced a pass by up to a third. A point whose rows would each hold more than the model's positions is not
# measured: it is extrapolated along the context axis.
CONTEXT = (0, 512, 2048, 6144, 14336)
# Static's padded rows read far more: a batch of 64 holds 64 copies of its widest prompt plus its age, up to 109,952
# cached tokens in gpu-check's chat workload (256 requests, 64 slots), up to 64 x 8,192 on the Azure trace.
# Extrapolated from 96 and 224 keys a row, where a GPU's decode costs about what its weights cost, those passes were
# priced nearly flat; so the dense axis measures 64 rows at 512, 2,048 and 8,064 keys each.
DENSE_CONTEXT = (*CONTEXT, 32768, 131072, 516096)
PATHS = ("ragged", "dense")  # continuous batching's ragged paged pass, or static batching's padded rectangle


def _needed(path: str, r: int, p: int, c: int, positions: int = 8192) -> bool:
    """Return whether the simulator ever asks for this grid point (the others are filled from measured ones)."""
    if r and c // r + 1 > positions or (path == "dense" and p // max(r, 1) > positions):
        return False  # no row can hold that many tokens
    if path == "ragged":
        return r > 0 or c == 0 and p > 0  # no decoding rows: a prefill alone, with no cached context
    return r > 0 and (p == 0 or c == 0)  # a decode column, or a prompt pass: a rectangle of r rows of p / r tokens


def _points(path: str, rows=ROWS, prefill=PREFILL, context=CONTEXT, positions: int = 8192) -> list:
    """Return the grid points a path measures, in the order they are measured."""
    return [(r, p, c) for r in rows for p in prefill for c in context if _needed(path, r, p, c, positions)]


def calibrate(
    model: str = "small",
    device: str | None = "cpu",
    rows: tuple[int, ...] = ROWS,
    prefill: tuple[int, ...] | None = None,
    context: tuple[int, ...] | None = None,
    on_point: Callable[[int, int], None] | None = None,
    threads: int = 1,
    path: str = "ragged",
    slots: int = 8,
) -> Fitted:
    """Return the measured profile of a replay model preset on a device, one grid point at a time.

    `path` "ragged" times continuous batching's pass; "dense" times static batching's rectangle, a prompt pass as
    `rows` rows of prefill / rows tokens each (a profile that prices a static batch's prefill by its rows). `prefill`
    and `context` default to the path's own axes (PREFILL and CONTEXT, or DENSE_PREFILL and DENSE_CONTEXT for the
    rectangles). Points the simulator never asks for (a pass with nothing in it, say) are filled from measured ones,
    so interpolation near them stays sane. Last, the wake: what a prompt pass costs beyond warm after the engine
    idled (`synthetic.time_wake`).
    """
    if path not in PATHS:
        raise ValueError(f"path must be one of {', '.join(PATHS)}, got {path!r}")
    if prefill is None:
        prefill = PREFILL if path == "ragged" else DENSE_PREFILL
    if context is None:
        context = CONTEXT if path == "ragged" else DENSE_CONTEXT
    engine = Engine(model, device, threads=threads)
    points = _points(path, rows, prefill, context, engine.model.config.max_positions)
    measured = {}
    for done, (r, p, c) in enumerate(points, start=1):
        if path == "ragged":
            measured[r, p, c] = time_pass(engine, r, p, c)
        else:
            measured[r, p, c] = time_dense_pass(engine, r, p, c, slots)
        if on_point:
            on_point(done, len(points))
    grid = _fill(measured, rows, prefill, context)
    wake_ms, wake_gap_ms = time_wake(engine, path)
    name = "fitted" if path == "ragged" else "fitted (static)"
    return Fitted(
        rows,
        prefill,
        context,
        grid,
        device=str(engine.device),
        model=model,
        name=name,
        prefill_rows=path == "dense",
        wake_ms=wake_ms,
        wake_gap_ms=wake_gap_ms,
    )


def _fill(measured: dict, rows, prefill, context) -> tuple:
    """Return the full grid: measured points as they are, the others as the nearest measured ones' costs added."""

    def at(r, p, c):
        if (r, p, c) in measured:
            return measured[r, p, c]
        k = context.index(c)
        if k >= 2 and (r, p, context[k - 1]) in measured and (r, p, context[k - 2]) in measured:
            # Past what a row holds: on along the context axis (each cached token costs what the last ones did),
            # never below the last point: noise that made the nearer one slower went negative, and Fitted refused it.
            (c0, v0), (c1, v1) = ((x, measured[r, p, x]) for x in context[k - 2 : k])
            return v1 + max(v1 - v0, 0.0) * (c - c1) / (c1 - c0)
        r1 = rows[1] if r == rows[0] else r  # the nearest row count that holds decoding rows
        base = measured.get((r1, prefill[0], context[0])) or measured.get((r1, prefill[0], context[1]), 0.0)
        decode = measured.get((r1, prefill[0], c), base)
        prompt = measured.get((rows[0], p, context[0])) or measured.get((r1, p, context[0]), base)
        return max(decode + prompt - base, 0.01)

    return tuple(tuple(tuple(round(at(r, p, c), 4) for c in context) for p in prefill) for r in rows)


def profiles(model: str, device: str | None, slots: int = 8, on_point=None, threads: int = 1) -> dict[str, Fitted]:
    """Return both policies' profiles on this device: {"continuous": ragged, "static": dense}."""
    first = len(_points("ragged"))
    total = first + len(_points("dense", prefill=DENSE_PREFILL, context=DENSE_CONTEXT))

    def progress(offset):  # one progress over both grids, the ragged first
        return (lambda k, _n: on_point(offset + k, total)) if on_point else None

    ragged = calibrate(model, device, on_point=progress(0), threads=threads)
    dense = calibrate(model, device, on_point=progress(first), threads=threads, path="dense", slots=slots)
    return {"continuous": ragged, "static": dense}
