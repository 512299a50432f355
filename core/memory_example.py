"""The worked memory example: the same eight requests and the same 12-block pool, paged, contiguous and static.

Eight requests arrive together, each with a 4-token prompt, outputs 10, 3, 2, 6, 4, 2, 8 and 3 tokens, on 4 slots
and a pool of 12 blocks of 4 tokens (48 tokens of KV). Paged: a request starts with 2 blocks (prompt + 1 token) and
grows, so all 4 slots run. Contiguous: each reserves prompt + the longest output (14 tokens: 4 blocks), so 3 fit and
the fourth slot stays empty. Static: every row of the batch reserves the same 4 blocks, and waits for the longest.
"""

from __future__ import annotations

from .engine import Schedule, schedule
from .memory import MemoryConfig
from .request import Request

SLOTS = 4
BLOCKS = 12
BLOCK_SIZE = 4
PROMPT = 4
OUTPUTS = (10, 3, 2, 6, 4, 2, 8, 3)
MODES = {  # label -> (policy, allocation)
    "paged": ("continuous", "paged"),
    "contiguous": ("continuous", "contiguous"),
    "static": ("static", "paged"),
}


def memory_requests() -> list[Request]:
    """Return the example's eight requests, A to H."""
    return [Request(chr(ord("A") + i), 0, out, PROMPT) for i, out in enumerate(OUTPUTS)]


def memory_runs(blocks: int = BLOCKS) -> dict[str, Schedule]:
    """Return the example's three schedules on a pool of `blocks` blocks (step clock)."""
    reqs = memory_requests()
    return {
        mode: schedule(reqs, SLOTS, policy, MemoryConfig(kv_blocks=blocks, block_size=BLOCK_SIZE, allocation=alloc))
        for mode, (policy, alloc) in MODES.items()
    }
