"""Exercise 3: one batch, three rows with their own sampling; the classic bug applies the first row's temperature."""

from __future__ import annotations

from dataclasses import dataclass, replace

import numpy as np

from core.batch.sampling import SamplingArgs, SamplingParams, filtered_probs, prepare, sample

VOCAB = 16  # a small vocabulary, so each row's distribution reads as a bar chart
DRAWS = 20
# The first row is not greedy: the bug copies its temperature to every row, and the greedy row starts sampling.
ROWS = (
    ("temperature 1.2, top-p 0.9", SamplingParams(temperature=1.2, top_p=0.9, seed=11)),
    ("greedy", SamplingParams(temperature=0.0, seed=12)),
    ("temperature 0.7, top-k 5", SamplingParams(temperature=0.7, top_k=5, seed=13)),
)


def row_logits(seed: int = 0) -> np.ndarray:
    """Return fixed (rows, VOCAB) logits: one made-up next-token distribution per row."""
    return np.random.default_rng(seed).normal(0.0, 1.5, size=(len(ROWS), VOCAB))


def one_temperature(args: SamplingArgs) -> SamplingArgs:
    """Return the bug: the batch's first temperature applied to every row (top-k, top-p and seeds stay per row)."""
    first = np.full_like(args.temperatures, args.temperatures[0])
    return replace(args, temperatures=first, all_greedy=bool(first[0] == 0))


@dataclass(frozen=True)
class TemperatureResult:
    """Each row's distribution and its repeated draws, with or without the bug."""

    probs: np.ndarray  # (rows, VOCAB)
    draws: np.ndarray  # (DRAWS, rows) token ids, one batch step per line

    def changed_rows(self, other: TemperatureResult) -> list[int]:
        """Return the rows whose distribution differs from `other`'s."""
        return [i for i in range(len(ROWS)) if not np.allclose(self.probs[i], other.probs[i])]


def run_rows(bug: bool, draws: int = DRAWS, seed: int = 0) -> TemperatureResult:
    """Sample the batch `draws` times from fixed logits, each row with its own generator; `bug`: one temperature."""
    logits = row_logits(seed)
    params = [p for _, p in ROWS]
    args = prepare(params, [p.make_rng() for p in params])
    if bug:
        args = one_temperature(args)
    tokens = np.array([sample(logits, args) for _ in range(draws)])
    return TemperatureResult(filtered_probs(logits, args), tokens)
