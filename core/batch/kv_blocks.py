"""nano-vllm's sequence-facing allocator over the core's one block pool (`core.kv.memory.KVPool`): no second allocator.

A sequence's blocks are listed in its block table; blocks are reused in the order they were freed (a FIFO free list,
which the replay's and the batch view's block tables follow). The scheduler asks `can_*` before acting.
"""

from __future__ import annotations

from collections.abc import Iterable

import numpy as np

from core.batch.sequence import Sequence
from core.kv.memory import KVPool, MemoryConfig


class BlockAllocator:
    """Owns `num_blocks` blocks of `block_size` token slots through one `KVPool`; requests are sequence indices."""

    def __init__(self, num_blocks: int, block_size: int):
        if num_blocks < 1 or block_size < 1:
            raise ValueError(f"num_blocks and block_size must be >= 1, got {num_blocks} and {block_size}")
        self.block_size = block_size
        self.pool = KVPool(MemoryConfig(kv_blocks=num_blocks, block_size=block_size), reuse="fifo")

    @property
    def num_free_blocks(self) -> int:
        """Return how many blocks are free."""
        return self.pool.free

    @property
    def free_blocks(self) -> list[int]:
        """Return the free block ids, in the order they will be taken."""
        return list(self.pool.free_ids)

    @property
    def owner(self) -> np.ndarray:
        """Return each block's sequence index, -1 when free."""
        return np.array(self.pool.owners(), dtype=np.int64)

    def blocks_needed(self, seq: Sequence) -> int:
        """Return how many more blocks `seq` needs to hold KV for all of its tokens."""
        return max(0, -(-seq.num_tokens // self.block_size) - len(seq.block_table))

    def can_allocate(self, seq: Sequence) -> bool:
        """Return whether a new sequence's tokens fit in the free blocks."""
        return not seq.block_table and self.pool.can_allocate(seq.seq_index, seq.num_tokens)

    def allocate(self, seq: Sequence) -> None:
        """Give a newly admitted sequence the blocks for its tokens; nobody else's blocks move."""
        if not self.can_allocate(seq):
            raise RuntimeError(f"cannot allocate {self.blocks_needed(seq)} blocks for {seq.seq_id}")
        self.pool.allocate(seq.seq_index, seq.num_tokens)
        seq.block_table = self.pool.blocks[seq.seq_index]  # the pool's own list: it grows as the pool gives blocks

    def can_append(self, seq: Sequence) -> bool:
        """Return whether `seq`'s tokens (after appending one) fit, taking a free block if needed."""
        return self.blocks_needed(seq) <= self.num_free_blocks

    def append(self, seq: Sequence) -> None:
        """Add a block to `seq`'s table if its tokens outgrew the last one."""
        if not self.can_append(seq):
            raise RuntimeError(f"no free block for {seq.seq_id}")
        if seq.seq_index not in self.pool.held:  # a sequence with no tokens yet was never given a table
            self.pool.allocate(seq.seq_index, 0)
            seq.block_table = self.pool.blocks[seq.seq_index]
        self.pool.append(seq.seq_index, seq.num_tokens)

    def free(self, seq: Sequence) -> None:
        """Return all of `seq`'s blocks at once."""
        if seq.seq_index in self.pool.held:
            self.pool.release(seq.seq_index)
        seq.block_table = []

    def reset(self, free_order: Iterable[int] | None = None) -> None:
        """Free every block, the free list in `free_order` (default 0, 1, ...); sequences' tables are theirs to drop."""
        self.pool.reset(None if free_order is None else list(free_order))
