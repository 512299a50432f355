"""The ragged, flattened batch: every running sequence's new tokens in one buffer, no padding."""

from __future__ import annotations

from collections.abc import Sequence as Seq
from dataclasses import dataclass

import numpy as np

from core.batch.sequence import Sequence


@dataclass(frozen=True)
class RaggedBatch:
    """One forward pass's inputs. Sequence i's new tokens are token_ids[cu_seqlens[i]:cu_seqlens[i+1]]."""

    token_ids: np.ndarray  # (T,) all new tokens, flattened
    positions: np.ndarray  # (T,) each token's position in its own sequence
    cu_seqlens: np.ndarray  # (n+1,) cumulative new-token counts, starting at 0
    context_lens: np.ndarray  # (n,) tokens each sequence attends over after this step
    block_tables: np.ndarray  # (n, max_blocks) physical block ids, -1 padded
    slot_mapping: np.ndarray  # (T,) the KV-cache slot each new token writes: block * block_size + offset

    @property
    def last_token_index(self) -> np.ndarray:
        """Return, per sequence, the flattened index of its last token (whose logits are sampled)."""
        return self.cu_seqlens[1:] - 1


def build_batch(running: Seq[Sequence], block_size: int) -> RaggedBatch:
    """Return the flattened batch: a prefilling sequence contributes its prompt, a decoding one a single token."""
    token_ids: list[int] = []
    positions: list[int] = []
    cu_seqlens = [0]
    slot_mapping: list[int] = []
    for seq in running:
        new = range(seq.num_computed_tokens, seq.num_tokens)
        token_ids.extend(seq.token_ids[seq.num_computed_tokens :])
        positions.extend(new)
        cu_seqlens.append(cu_seqlens[-1] + len(new))
        slot_mapping.extend(seq.block_table[p // block_size] * block_size + p % block_size for p in new)
    width = max((len(s.block_table) for s in running), default=0)
    tables = np.full((len(running), width), -1, dtype=np.int64)
    for i, seq in enumerate(running):
        tables[i, : len(seq.block_table)] = seq.block_table
    as_array = lambda xs: np.array(xs, dtype=np.int64)  # noqa: E731
    return RaggedBatch(
        token_ids=as_array(token_ids),
        positions=as_array(positions),
        cu_seqlens=as_array(cu_seqlens),
        context_lens=as_array([s.num_tokens for s in running]),
        block_tables=tables,
        slot_mapping=as_array(slot_mapping),
    )
