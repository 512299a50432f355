"""A paged KV-cache block allocator: fixed-size blocks, no policy; the scheduler asks `can_*` before acting."""

from __future__ import annotations

from collections import deque
from collections.abc import Iterable

import numpy as np

from .sequence import Sequence


class BlockAllocator:
    """Owns `num_blocks` blocks of `block_size` token slots; a sequence's blocks are listed in its block table."""

    def __init__(self, num_blocks: int, block_size: int):
        if num_blocks < 1 or block_size < 1:
            raise ValueError(f"num_blocks and block_size must be >= 1, got {num_blocks} and {block_size}")
        self.block_size = block_size
        self.free_blocks: deque[int] = deque(range(num_blocks))
        self.owner = np.full(num_blocks, -1, dtype=np.int64)  # sequence index per block, -1 when free

    @property
    def num_free_blocks(self) -> int:
        """Return how many blocks are free."""
        return len(self.free_blocks)

    def blocks_needed(self, seq: Sequence) -> int:
        """Return how many more blocks `seq` needs to hold KV for all of its tokens."""
        return max(0, -(-seq.num_tokens // self.block_size) - len(seq.block_table))

    def can_allocate(self, seq: Sequence) -> bool:
        """Return whether a new sequence's tokens fit in the free blocks."""
        return not seq.block_table and self.blocks_needed(seq) <= self.num_free_blocks

    def allocate(self, seq: Sequence) -> None:
        """Give a newly admitted sequence the blocks for its tokens; nobody else's blocks move."""
        if not self.can_allocate(seq):
            raise RuntimeError(f"cannot allocate {self.blocks_needed(seq)} blocks for {seq.seq_id}")
        self._grow(seq)

    def can_append(self, seq: Sequence) -> bool:
        """Return whether `seq`'s tokens (after appending one) fit, taking a free block if needed."""
        return self.blocks_needed(seq) <= self.num_free_blocks

    def append(self, seq: Sequence) -> None:
        """Add a block to `seq`'s table if its tokens outgrew the last one."""
        if not self.can_append(seq):
            raise RuntimeError(f"no free block for {seq.seq_id}")
        self._grow(seq)

    def free(self, seq: Sequence) -> None:
        """Return all of `seq`'s blocks at once."""
        for block in seq.block_table:
            self.owner[block] = -1
            self.free_blocks.append(block)
        seq.block_table = []

    def reset(self, free_order: Iterable[int] | None = None) -> None:
        """Free every block, the free list in `free_order` (default 0, 1, ...); sequences' tables are theirs to drop."""
        order = list(range(len(self.owner)) if free_order is None else free_order)
        if sorted(order) != list(range(len(self.owner))):
            raise ValueError(f"free_order must hold each of the {len(self.owner)} blocks once")
        self.free_blocks = deque(order)
        self.owner[:] = -1

    def _grow(self, seq: Sequence) -> None:
        for _ in range(self.blocks_needed(seq)):
            block = self.free_blocks.popleft()
            self.owner[block] = seq.seq_index
            seq.block_table.append(block)
