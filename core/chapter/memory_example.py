"""The worked memory example: the same eight requests and the same 12-block pool, paged, contiguous and static.

Eight requests A-H arrive together with prompts of 8, 8, 2, 2, 4, 4, 4 and 4 tokens and outputs of 10, 3, 2, 6, 4,
2, 8 and 3 tokens, on 4 slots and a pool of 12 blocks of 4 tokens (48 tokens of KV). Paged: a request starts with
the blocks for its prompt and one token (A: 3 blocks, C: 1) and grows one block at a time, so all 4 slots run, as
with unlimited memory. Contiguous: each reserves one run for its prompt plus the longest answer, 10 tokens (A and B:
5 blocks each; C and D: 3; E to H: 4), so A and B take 10 of the 12 blocks and C waits with two slots empty; at steps
10 and 12, G and then H find 4 free blocks that are not one run: holes that retired requests left. Static: every row
of a batch reserves the widest prompt plus 10 tokens, and the batch runs until its longest member finishes.
"""

from __future__ import annotations

from core.kv.memory import MemoryConfig
from core.sched.engine import schedule
from core.sched.schedule_record import Schedule
from core.workload.request import Request

SLOTS = 4
BLOCKS = 12
BLOCK_SIZE = 4
PROMPTS = (8, 8, 2, 2, 4, 4, 4, 4)
OUTPUTS = (10, 3, 2, 6, 4, 2, 8, 3)
MODES = {  # label -> (policy, allocation)
    "paged": ("continuous", "paged"),
    "contiguous": ("continuous", "contiguous"),
    "static": ("static", "paged"),
}


def memory_requests() -> list[Request]:
    """Return the example's eight requests, A to H."""
    return [Request(chr(ord("A") + i), 0, out, prompt) for i, (out, prompt) in enumerate(zip(OUTPUTS, PROMPTS))]


def memory_runs(blocks: int = BLOCKS) -> dict[str, Schedule]:
    """Return the example's three schedules on a pool of `blocks` blocks (step clock)."""
    reqs = memory_requests()
    return {
        mode: schedule(reqs, SLOTS, policy, MemoryConfig(kv_blocks=blocks, block_size=BLOCK_SIZE, allocation=alloc))
        for mode, (policy, alloc) in MODES.items()
    }


# The smallest pool the example runs on: the widest prompt plus the longest answer, in blocks (a static row, or a
# contiguous reservation, must fit whole).
MIN_BLOCKS = max(-(-(prompt + max(OUTPUTS)) // BLOCK_SIZE) for prompt in PROMPTS)
