"""Measure a model's forward-pass times over rows, prefill tokens and context: the profile a fitted cost model reads."""

from __future__ import annotations

from collections.abc import Callable

from core.cost import Fitted

from .engine import Engine
from .synthetic import time_dense_pass, time_pass

# The grid: decoding rows, prompt tokens prefilled beside them, and cached tokens read in all (split evenly). Dense
# where a few slots' batches live: an online replay's passes fall between points and are interpolated, and the cost
# of a prompt is convex (attention is quadratic in it), so its axis is the finest.
ROWS = (0, 1, 2, 4, 8, 16, 64)
PREFILL = (0, 64, 128, 256, 512, 1024)
CONTEXT = (0, 512, 2048, 6144)  # one row may hold all of it: within the models' 8,192 positions
PATHS = ("ragged", "dense")  # continuous batching's ragged paged pass, or static batching's padded rectangle


def _needed(path: str, r: int, p: int, c: int) -> bool:
    """Return whether the simulator ever asks for this grid point (the others are filled, additively)."""
    if path == "ragged":
        return r > 0 or c == 0 and p > 0  # no decoding rows: a prefill alone, with no cached context
    return r > 0 and (p == 0 or c == 0)  # a decode column, or a prompt pass: a rectangle of r rows of p / r tokens


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

    `path` "ragged" times continuous batching's pass; "dense" times static batching's rectangle, a prompt pass as
    `rows` rows of prefill / rows tokens each (a profile that prices a static batch's prefill by its rows). Points
    the simulator never asks for (a pass with nothing in it, say) are filled additively from measured ones, so
    interpolation near them stays sane.
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
    return Fitted(
        rows, prefill, context, grid, device=str(engine.device), model=model, name=name, prefill_rows=path == "dense"
    )


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
