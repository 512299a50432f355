"""Per-request sampling in two steps: `prepare` the batch's parameters, then `sample` each row with its own."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np


@dataclass(frozen=True)
class SamplingParams:
    """One request's sampling: greedy when temperature is 0; top_k 0 means no limit; seed None means unseeded."""

    temperature: float = 0.0
    top_k: int = 0
    top_p: float = 1.0
    seed: int | None = None

    def __post_init__(self) -> None:
        if not 0.0 <= self.temperature <= 100.0:
            raise ValueError(f"temperature must be in 0..100, got {self.temperature!r}")
        if self.top_k < 0:
            raise ValueError(f"top_k must be >= 0 (0: no limit), got {self.top_k!r}")
        if not 0.0 < self.top_p <= 1.0:
            raise ValueError(f"top_p must be in (0, 1], got {self.top_p!r}")

    def make_rng(self) -> np.random.Generator:
        """Return this request's own generator; keep it for the request's lifetime so draws continue."""
        return np.random.default_rng(self.seed)


@dataclass(frozen=True)
class SamplingArgs:
    """A batch's sampling parameters as arrays, one row per request."""

    temperatures: np.ndarray  # (n,)
    top_k: np.ndarray  # (n,)
    top_p: np.ndarray  # (n,)
    rngs: tuple[np.random.Generator, ...]
    all_greedy: bool


def prepare(params: Sequence[SamplingParams], rngs: Sequence[np.random.Generator]) -> SamplingArgs:
    """Return the batch's SamplingArgs; `rngs[i]` is request i's own generator."""
    temps = np.array([p.temperature for p in params], dtype=np.float64)
    return SamplingArgs(
        temperatures=temps,
        top_k=np.array([p.top_k for p in params], dtype=np.int64),
        top_p=np.array([p.top_p for p in params], dtype=np.float64),
        rngs=tuple(rngs),
        all_greedy=bool((temps == 0).all()),
    )


def filtered_probs(logits: np.ndarray, args: SamplingArgs) -> np.ndarray:
    """Return (n, V) probabilities after each row's temperature, top-k and top-p (greedy rows: one-hot)."""
    n, vocab = logits.shape
    greedy = args.temperatures == 0
    scaled = logits / np.where(greedy, 1.0, args.temperatures)[:, None]  # (n, V)
    order = np.argsort(-scaled, axis=1, kind="stable")  # (n, V), best first
    ranked = np.take_along_axis(scaled, order, axis=1)
    k = np.where(args.top_k > 0, np.minimum(args.top_k, vocab), vocab)
    k = np.where(greedy, 1, k)
    keep = np.arange(vocab)[None, :] < k[:, None]  # (n, V) top-k mask in ranked order
    probs = np.exp(ranked - ranked[:, :1]) * keep
    probs /= probs.sum(axis=1, keepdims=True)
    # top-p: keep the smallest prefix whose mass reaches p (the first token always stays).
    before = np.cumsum(probs, axis=1) - probs
    probs *= before < args.top_p[:, None]
    probs /= probs.sum(axis=1, keepdims=True)
    out = np.zeros_like(probs)
    np.put_along_axis(out, order, probs, axis=1)
    return out


def sample(logits: np.ndarray, args: SamplingArgs) -> np.ndarray:
    """Return one token id per row, each drawn with that row's own parameters and generator."""
    if args.all_greedy:
        return logits.argmax(axis=1)
    probs = filtered_probs(logits, args)
    tokens = probs.argmax(axis=1)
    for i in np.flatnonzero(args.temperatures > 0):
        cdf = np.cumsum(probs[i])
        tokens[i] = min(int(np.searchsorted(cdf, args.rngs[i].random() * cdf[-1], side="right")), len(cdf) - 1)
    return tokens
