"""The KV pool at the cursor on a limited pool: each block's owner at each step, as app/web/batch.js draws it.

On a limited pool the batch view's own block tables (which assume a pool that never runs out) step aside for the
pool the memory engine kept: one box per block, at the cursor's step, for both modes, the mode shown first.
"""

from __future__ import annotations

from app.server.byte_cache import byte_cache
from core import Run

MAX_POOL_CELLS = 100_000  # blocks x steps sent to the browser per run; past it the page says the pool is too big
TITLES = {"static": "Static batching (whole rows reserved)", "paged": "Continuous batching, paged",
          "contiguous": "Continuous batching, contiguous (one run each)"}  # fmt: skip
TOO_BIG = (
    '<p class="bv-batch-empty">This pool is too large to draw block by block here; the KV strips under the '
    "timelines count its blocks.</p>"
)


@byte_cache(share=0.05)  # runs are shared and immutable (compared by identity): every session reads the same
def owners_by_step(run: Run) -> list[tuple[int, ...]] | None:
    """Return, for each step 0..drain-1, each block's owner (-1: free), or None when too big to send."""
    s = run.schedule
    if s is None or s.pool_maps is None or s.memory.kv_blocks * run.drain > MAX_POOL_CELLS:
        return None
    out = [(-1,) * s.memory.kv_blocks] * run.drain
    for p, start in enumerate(s.pass_start.tolist()):
        out[int(start)] = s.pool_maps[p]
    return out
