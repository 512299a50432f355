"""What one forward pass costs: a unit step (the chapter's picture), a roofline model, or a profile from a device.

Every cost model answers one question, vectorised over passes: the milliseconds of a pass that decodes `rows`
sequences (one new token each), prefills `prefill_tokens` prompt tokens, and reads `context_tokens` cached tokens'
keys and values.
"""

from __future__ import annotations

import json
import math
from dataclasses import asdict, dataclass, fields
from pathlib import Path
from typing import Protocol

import numpy as np


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


@dataclass(frozen=True)
class Roofline:
    """A pass reads every weight once plus the KV cache it attends over, or computes, whichever is slower.

    Compute is 2 FLOP per parameter per token computed (each decoding row and each prompt token), so a long prefill is
    compute-bound while a small decode batch is memory-bound. The defaults are Llama-2 7B in bf16 on an H100 SXM
    (`core.hardware`'s default presets; a test keeps them equal).
    """

    params_b: float = 6.74  # model parameters, billions
    bytes_per_param: float = 2.0  # fp16/bf16 weights
    kv_bytes_per_token: float = 524_288.0  # 2 (K,V) x 32 layers x 32 KV heads x 128 dims x 2 bytes
    mem_bw_gbs: float = 3_350.0  # HBM bandwidth, GB/s
    tflops: float = 989.0  # dense bf16 throughput, TFLOP/s
    overhead_ms: float = 1.0  # launch and scheduling overhead per pass
    name: str = "roofline"

    def __post_init__(self) -> None:
        for field in ("params_b", "bytes_per_param", "mem_bw_gbs", "tflops"):
            if not 0 < getattr(self, field) < math.inf:
                raise ValueError(f"{field} must be a finite number > 0, got {getattr(self, field)!r}")
        for field in ("kv_bytes_per_token", "overhead_ms"):
            if not 0 <= getattr(self, field) < math.inf:
                raise ValueError(f"{field} must be a finite number >= 0, got {getattr(self, field)!r}")

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

    def __post_init__(self) -> None:
        grid = np.asarray(self.ms, dtype=float)
        shape = (len(self.rows), len(self.prefill_tokens), len(self.context_tokens))
        if grid.shape != shape:
            raise ValueError(f"ms must have shape {shape} (rows x prefill_tokens x context_tokens), got {grid.shape}")
        for axis in ("rows", "prefill_tokens", "context_tokens"):
            values = getattr(self, axis)
            if len(values) < 2 or any(b <= a for a, b in zip(values, values[1:])):
                raise ValueError(f"{axis} must hold at least two increasing values, got {list(values)}")
        if not np.all(np.isfinite(grid)) or np.any(grid <= 0):
            raise ValueError("ms must hold finite times > 0")

    def pass_ms(self, rows, prefill_tokens, context_tokens):
        """Return the interpolated pass time (at least 1% of the smallest measured time)."""
        grid = np.asarray(self.ms, dtype=float)
        r, p, c = np.broadcast_arrays(*(np.asarray(x, dtype=float) for x in (rows, prefill_tokens, context_tokens)))
        (i, fi), (j, fj), (k, fk) = (
            _cell(np.asarray(axis, dtype=float), x)
            for axis, x in ((self.rows, r), (self.prefill_tokens, p), (self.context_tokens, c))
        )
        out = np.zeros(r.shape)
        for di, wi in ((0, 1 - fi), (1, fi)):
            for dj, wj in ((0, 1 - fj), (1, fj)):
                for dk, wk in ((0, 1 - fk), (1, fk)):
                    out = out + wi * wj * wk * grid[i + di, j + dj, k + dk]
        out = np.maximum(out, 0.01 * grid.min())
        return float(out) if out.ndim == 0 else out

    def step_ms(self, batch, context_tokens):
        """Return a decode pass over `batch` rows that each attend over `context_tokens` (the sweep's question)."""
        return self.pass_ms(batch, 0, np.multiply(batch, context_tokens))

    def save(self, path: str | Path) -> Path:
        """Write the profile as JSON and return its path."""
        path = Path(path)
        path.write_text(json.dumps({"kind": "fitted", **asdict(self)}, indent=1), encoding="utf-8")
        return path

    @classmethod
    def load(cls, path: str | Path) -> Fitted:
        """Read a profile written by `save` (or `batchviz calibrate`); a bad file names what is wrong."""
        try:
            doc = json.loads(Path(path).read_text(encoding="utf-8"))
        except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
            raise ValueError(f"cannot read the profile {path}: {exc}") from None
        if not isinstance(doc, dict) or doc.get("kind") != "fitted":
            raise ValueError(f'{path}: not a batchviz profile (expected {{"kind": "fitted", ...}})')
        try:
            return cls(
                rows=tuple(doc["rows"]),
                prefill_tokens=tuple(doc["prefill_tokens"]),
                context_tokens=tuple(doc["context_tokens"]),
                ms=tuple(tuple(tuple(x) for x in plane) for plane in doc["ms"]),
                device=str(doc.get("device", "")),
                model=str(doc.get("model", "")),
            )
        except (KeyError, TypeError) as exc:
            raise ValueError(f"{path}: a profile needs rows, prefill_tokens, context_tokens and ms ({exc})") from None


def _cell(axis: np.ndarray, x: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Return, per value, the grid cell's lower index and the fraction along it (outside the grid: extrapolated)."""
    i = np.clip(np.searchsorted(axis, x, side="right") - 1, 0, len(axis) - 2)
    return i, (x - axis[i]) / (axis[i + 1] - axis[i])
