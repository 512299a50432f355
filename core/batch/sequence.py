"""A running request's token-level state: its tokens, how many have KV computed, its blocks and sampling."""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from core.batch.sampling import SamplingParams


@dataclass
class Sequence:
    """Prompt plus generated tokens; tokens [num_computed_tokens:] still need a forward pass."""

    seq_id: str
    seq_index: int
    token_ids: list[int]
    num_prompt_tokens: int
    max_new_tokens: int
    params: SamplingParams = field(default_factory=SamplingParams)
    num_computed_tokens: int = 0
    block_table: list[int] = field(default_factory=list)
    rng: np.random.Generator | None = None

    def __post_init__(self) -> None:
        if self.rng is None:
            self.rng = self.params.make_rng()

    @property
    def num_tokens(self) -> int:
        """Return prompt plus generated tokens."""
        return len(self.token_ids)

    @property
    def num_new_tokens(self) -> int:
        """Return how many tokens this step computes: the whole prompt in prefill, one in decode."""
        return self.num_tokens - self.num_computed_tokens

    @property
    def num_generated(self) -> int:
        """Return how many tokens have been generated."""
        return self.num_tokens - self.num_prompt_tokens

    @property
    def is_finished(self) -> bool:
        """Return whether the sequence generated all its tokens."""
        return self.num_generated >= self.max_new_tokens
