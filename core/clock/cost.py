"""What one forward pass costs: a unit step (the chapter's picture), a roofline model, or a profile from a device.

Every cost model answers one question, vectorised over passes: the milliseconds of a pass that decodes `rows`
sequences (one new token each), prefills `prefill_tokens` prompt tokens, and reads `context_tokens` cached tokens'
keys and values.
"""

from __future__ import annotations

import json
from bisect import bisect_right
from dataclasses import asdict, dataclass, fields
from pathlib import Path
from typing import Protocol

import numpy as np

from core.limits import (
    MAX_PASS_MS,
    MAX_PROFILE_AXIS,
    MAX_PROFILE_BYTES,
    MAX_PROFILE_POINTS,
    LimitError,
    read_regular_file,
    show_name,
    show_number,
)


class StepCost(Protocol):
    """A forward pass's duration from what it holds."""

    name: str

    def pass_ms(self, rows, prefill_tokens, context_tokens):
        """Return the milliseconds of passes (numbers or arrays, broadcast together)."""


@dataclass(frozen=True)
class UnitCost:
    """Every pass costs 1: times are steps, exactly the chapter's semantics."""

    name: str = "unit"

    def pass_ms(self, rows, prefill_tokens, context_tokens):
        """Return 1 for every pass."""
        return np.ones(np.broadcast(rows, prefill_tokens, context_tokens).shape) if np.ndim(rows) else 1.0


# Each roofline number's range, one place for the CLI's flags and the page's inputs: wide enough for any real
# accelerator and model (a 2-trillion-parameter model, 100 TB/s), narrow enough that no pass costs 1e300 ms.
ROOFLINE_RANGES = {
    "params_b": (0.01, 2000.0),
    "bytes_per_param": (0.25, 8.0),
    "kv_bytes_per_token": (0.0, 1e8),
    "mem_bw_gbs": (1.0, 1e5),
    "tflops": (0.01, 1e5),
    "overhead_ms": (0.0, 100.0),
}


@dataclass(frozen=True)
class Roofline:
    """A pass reads every weight once plus the KV cache it attends over, or computes, whichever is slower.

    Compute is 2 FLOP per parameter per token computed (each decoding row and each prompt token), so a long prefill is
    compute-bound while a small decode batch is memory-bound. The defaults are Llama-2 7B in bf16 on an H100 SXM
    (`core.clock.hardware`'s default presets; a test keeps them equal).
    """

    params_b: float = 6.74  # model parameters, billions
    bytes_per_param: float = 2.0  # fp16/bf16 weights
    kv_bytes_per_token: float = 524_288.0  # 2 (K,V) x 32 layers x 32 KV heads x 128 dims x 2 bytes
    mem_bw_gbs: float = 3_350.0  # HBM bandwidth, GB/s
    tflops: float = 989.0  # dense bf16 throughput, TFLOP/s
    overhead_ms: float = 1.0  # launch and scheduling overhead per pass
    name: str = "roofline"

    def __post_init__(self) -> None:
        for field, (low, high) in ROOFLINE_RANGES.items():
            if not low <= getattr(self, field) <= high:
                raise ValueError(f"{field} must be a number in {low:g}..{high:g}, got {getattr(self, field)!r}")

    def pass_ms(self, rows, prefill_tokens, context_tokens):
        """Return max(memory, compute) + overhead, in milliseconds."""
        memory_ms = (
            self.params_b * 1e9 * self.bytes_per_param + np.multiply(context_tokens, self.kv_bytes_per_token)
        ) / (self.mem_bw_gbs * 1e6)
        compute_ms = 2 * self.params_b * 1e9 * np.add(rows, prefill_tokens) / (self.tflops * 1e9)
        return np.maximum(memory_ms, compute_ms) + self.overhead_ms

    def step_ms(self, batch, context_tokens):
        """Return a decode pass over `batch` rows that each attend over `context_tokens` (the sweep's question)."""
        return self.pass_ms(batch, 0, np.multiply(batch, context_tokens))


# The roofline's numbers (every field but its name): one CLI flag and one page input each.
ROOFLINE_FIELDS = tuple(f for f in fields(Roofline) if f.name != "name")


@dataclass(frozen=True)
class Fitted:
    """A profile measured on a device: pass times on a grid of rows, prefill tokens and context, interpolated.

    Between grid points the time is trilinear; past the grid's ends it is extrapolated linearly from the last two
    points of each axis, so a pass bigger than anything measured still costs more, not the same.
    """

    rows: tuple[float, ...]
    prefill_tokens: tuple[float, ...]
    context_tokens: tuple[float, ...]
    ms: tuple  # nested: ms[i][j][k] for rows[i], prefill_tokens[j], context_tokens[k]
    device: str = ""
    model: str = ""
    name: str = "fitted"
    # Static's own profile: its prompt passes were timed as rectangles of `rows` rows, so a static batch's prefill is
    # priced with the rows it really holds (a light load's batch of one is not a full batch's prompt spread thin).
    prefill_rows: bool = False
    # An engine that idled pays on waking: its next pass runs with cold caches (measured by calibrate, 0 where not).
    # A pass that starts `gap` ms after the previous one ended costs wake_ms * min(1, gap / wake_gap_ms) more.
    wake_ms: float = 0.0
    wake_gap_ms: float = 10.0

    def __post_init__(self) -> None:
        if not (isinstance(self.wake_ms, (int, float)) and 0 <= self.wake_ms <= MAX_PASS_MS):
            raise ValueError(f"wake_ms must be a number in 0..{MAX_PASS_MS:,.0f}, got {self.wake_ms!r}")
        if not (isinstance(self.wake_gap_ms, (int, float)) and 0 < self.wake_gap_ms <= MAX_PASS_MS):
            raise ValueError(f"wake_gap_ms must be a number in (0, {MAX_PASS_MS:,.0f}], got {self.wake_gap_ms!r}")
        for axis in AXES:
            _check_axis(axis, getattr(self, axis))
        shape = _check_points([len(getattr(self, axis)) for axis in AXES])
        try:
            grid = np.asarray(self.ms, dtype=float)
        except (TypeError, ValueError, OverflowError):
            grid = np.zeros(0)
        if grid.shape != shape:
            raise ValueError(f"ms must be a grid of shape {shape} (rows x prefill_tokens x context_tokens) of numbers")
        bad = np.argwhere(~((grid > 0) & (grid <= MAX_PASS_MS)))  # NaN fails too
        if len(bad):
            where = "".join(f"[{i}]" for i in bad[0])
            raise ValueError(
                f"ms must hold times > 0 and at most {MAX_PASS_MS:,.0f} ms (an hour per pass); "
                f"ms{where} is {show_number(float(grid[tuple(bad[0])]))}"
            )
        grid.setflags(write=False)
        # Built once: pass_ms runs once per simulated pass, so it must not rebuild the grid from the nested tuples.
        object.__setattr__(self, "_grid", grid)
        object.__setattr__(self, "_axes", tuple(np.asarray(getattr(self, axis), dtype=float) for axis in AXES))
        object.__setattr__(self, "_floor", 0.01 * float(grid.min()))

    def pass_ms(self, rows, prefill_tokens, context_tokens):
        """Return the interpolated pass time (at least 1% of the smallest measured time)."""
        grid = self._grid
        r, p, c = np.broadcast_arrays(*(np.asarray(x, dtype=float) for x in (rows, prefill_tokens, context_tokens)))
        (i, fi), (j, fj), (k, fk) = (_cell(axis, x) for axis, x in zip(self._axes, (r, p, c)))
        out = np.zeros(r.shape)
        for di, wi in ((0, 1 - fi), (1, fi)):
            for dj, wj in ((0, 1 - fj), (1, fj)):
                for dk, wk in ((0, 1 - fk), (1, fk)):
                    out = out + wi * wj * wk * grid[i + di, j + dj, k + dk]
        out = np.maximum(out, self._floor)
        return float(out) if out.ndim == 0 else out

    def step_ms(self, batch, context_tokens):
        """Return a decode pass over `batch` rows that each attend over `context_tokens` (the sweep's question)."""
        return self.pass_ms(batch, 0, np.multiply(batch, context_tokens))

    def wake(self, gap_ms: float) -> float:
        """Return what a pass costs beyond its profile when it starts `gap_ms` after the previous pass ended."""
        return self.wake_ms * min(1.0, gap_ms / self.wake_gap_ms) if gap_ms > 0 else 0.0

    def save(self, path: str | Path) -> Path:
        """Write the profile as JSON and return its path."""
        path = Path(path)
        path.write_text(json.dumps({"kind": "fitted", **asdict(self)}, indent=1), encoding="utf-8")
        return path

    @classmethod
    def load(cls, path: str | Path) -> Fitted:
        """Read a profile written by `save` (or `batchviz calibrate`); a bad file names itself and the field."""
        name = show_name(path)
        try:
            text = read_regular_file(path, MAX_PROFILE_BYTES, "profile JSON").decode("utf-8-sig")  # a BOM, as traces
        except (OSError, UnicodeDecodeError) as exc:
            raise ValueError(f"cannot read the profile {name}: {getattr(exc, 'strerror', None) or exc}") from None
        try:
            doc = json.loads(text)
        except RecursionError:
            raise ValueError(f"{name}: nested too deep; a profile is one object holding lists") from None
        except json.JSONDecodeError as exc:
            raise ValueError(f"{name}: not valid JSON ({exc})") from None
        except ValueError:  # Python reads no integer of more than 4,300 digits
            raise ValueError(f"{name}: a number of more than 4,300 digits; a profile holds pass times in ms") from None
        if not isinstance(doc, dict) or doc.get("kind") != "fitted":
            raise ValueError(f'{name}: not a batchviz profile (expected {{"kind": "fitted", ...}})')
        try:
            return cls(**_fields_of(doc))
        except ValueError as exc:
            raise type(exc)(f"{name}: {exc}") from None


AXES = ("rows", "prefill_tokens", "context_tokens")


def prices_rectangles(cost: StepCost | None) -> bool:
    """Return whether a static batch's prompt pass is priced with its rows (a profile timed as rectangles)."""
    return bool(getattr(cost, "prefill_rows", False))


def wake_of(cost: StepCost | None):
    """Return the cost model's wake (gap ms -> extra ms of the pass after an idle gap), or None where it has none."""
    return cost.wake if getattr(cost, "wake_ms", 0.0) > 0 else None


def scalar_pass_ms(cost: StepCost):
    """Return a fast scalar function (rows, prefill, context) -> ms for the cost model."""
    if isinstance(cost, UnitCost):
        return lambda rows, prefill, context: 1.0
    if isinstance(cost, Roofline):
        weights = cost.params_b * 1e9 * cost.bytes_per_param
        kv, bandwidth = cost.kv_bytes_per_token, cost.mem_bw_gbs * 1e6
        flop, compute, overhead = 2 * cost.params_b * 1e9, cost.tflops * 1e9, cost.overhead_ms

        # Roofline.pass_ms's arithmetic, in the same order, on Python floats: the same bits, without a numpy call.
        def roofline(rows, prefill, context):
            memory, computing = (weights + context * kv) / bandwidth, flop * (rows + prefill) / compute
            return (memory if memory >= computing else computing) + overhead  # max(), without the call

        return roofline
    if isinstance(cost, Fitted):
        return _fitted_scalar(cost)
    return lambda rows, prefill, context: float(cost.pass_ms(rows, prefill, context))


def _fitted_scalar(cost: Fitted):
    """Return Fitted.pass_ms on Python floats: the same trilinear sum in the same order, without numpy's per-call cost.

    The timed loop prices one pass at a time, and numpy's per-call overhead (~75 us) made a profile's sweep about
    40 times slower than the roofline's.
    """
    axes = [axis.tolist() for axis in cost._axes]
    grid, floor = cost._grid.tolist(), cost._floor

    def cell(axis: list[float], x: float) -> tuple[int, float]:
        i = min(max(bisect_right(axis, x) - 1, 0), len(axis) - 2)  # _cell's index: searchsorted "right", clipped
        return i, (x - axis[i]) / (axis[i + 1] - axis[i])

    def fitted(rows, prefill, context):
        (i, fi), (j, fj) = cell(axes[0], float(rows)), cell(axes[1], float(prefill))
        k, fk = cell(axes[2], float(context))
        out = 0.0
        for di, wi in ((0, 1 - fi), (1, fi)):
            plane = grid[i + di]
            for dj, wj in ((0, 1 - fj), (1, fj)):
                line = plane[j + dj]
                for dk, wk in ((0, 1 - fk), (1, fk)):
                    out = out + wi * wj * wk * line[k + dk]
        return out if out >= floor else floor

    return fitted


def _fields_of(doc: dict) -> dict:
    """Return a profile document's fields as Fitted takes them, refusing any of the wrong shape or type."""
    missing = [key for key in (*AXES, "ms") if key not in doc]
    if missing:
        raise ValueError(f"a profile needs {', '.join(AXES)} and ms; {missing[0]} is missing")
    out = {axis: _numbers(doc[axis], axis) for axis in AXES}
    planes = doc["ms"]
    shape = _check_points([len(out[axis]) for axis in AXES])  # before a nested tuple of a million is built
    if not isinstance(planes, list) or len(planes) != shape[0]:
        raise ValueError(f"ms must be a list of {shape[0]} planes, one per rows value")
    for i, plane in enumerate(planes):
        if not isinstance(plane, list) or len(plane) != shape[1]:
            raise ValueError(f"ms[{i}] must be a list of {shape[1]} lines, one per prefill_tokens value")
    out["ms"] = tuple(tuple(_numbers(line, f"ms[{i}][{j}]", shape[2]) for j, line in enumerate(plane))
                      for i, plane in enumerate(planes))  # fmt: skip
    prefill_rows = doc.get("prefill_rows", False)
    if not isinstance(prefill_rows, bool):
        raise ValueError(f"prefill_rows must be true or false, got a {type(prefill_rows).__name__}")
    out["prefill_rows"] = prefill_rows
    for key in ("wake_ms", "wake_gap_ms"):  # absent from profiles written before the wake was measured
        if key in doc:
            value = doc[key]
            if isinstance(value, bool) or not isinstance(value, (int, float)):
                raise ValueError(f"{key} must be a number, got a {type(value).__name__}")
            out[key] = float(value)
    for key in ("device", "model"):
        value = doc.get(key, "")
        if not isinstance(value, str) or len(value) > 100 or not value.isprintable():
            raise ValueError(f"{key} must be a printable string of at most 100 characters")
        out[key] = value
    return out


def _check_points(shape: list[int]) -> tuple[int, int, int]:
    """Return the grid's shape, refusing one of more than MAX_PROFILE_POINTS points."""
    if shape[0] * shape[1] * shape[2] > MAX_PROFILE_POINTS:
        raise LimitError(
            f"ms: a grid of {' x '.join(map(str, shape))} points is over the limit of {MAX_PROFILE_POINTS:,}"
        )
    return tuple(shape)


def _numbers(value, field: str, length: int | None = None) -> tuple:
    """Return a JSON list of plain numbers as a tuple (of `length` numbers when given)."""
    if not isinstance(value, list) or any(isinstance(x, bool) or not isinstance(x, (int, float)) for x in value):
        raise ValueError(f"{field} must be a flat list of numbers")
    if length is not None and len(value) != length:
        raise ValueError(f"{field} must hold {length} numbers, one per context_tokens value; got {len(value)}")
    return tuple(value)


def _check_axis(axis: str, values) -> None:
    """Raise ValueError unless an axis is at least two whole numbers in 0..MAX_PROFILE_AXIS, strictly increasing."""
    allowed = f"at least two whole numbers in 0..{MAX_PROFILE_AXIS:,}, strictly increasing"
    try:
        whole = all(0 <= v <= MAX_PROFILE_AXIS and float(v).is_integer() for v in values)  # NaN and inf fail
    except (TypeError, ValueError):
        whole = False
    if not whole or len(values) < 2 or any(b <= a for a, b in zip(values, values[1:])):
        shown = show_number(list(values)) if isinstance(values, (list, tuple)) else type(values).__name__
        raise ValueError(f"{axis} must hold {allowed}, got {shown}")


def _cell(axis: np.ndarray, x: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Return, per value, the grid cell's lower index and the fraction along it (outside the grid: extrapolated)."""
    i = np.clip(np.searchsorted(axis, x, side="right") - 1, 0, len(axis) - 2)
    return i, (x - axis[i]) / (axis[i + 1] - axis[i])
