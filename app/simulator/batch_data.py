"""The batch view's constants for app/web/batch.js: sizes, limits, colours, texts (tests/oracles/batch_view.py too)."""

from __future__ import annotations

import inspect

from app.simulator import chapter, pool_at
from core.batch.ragged import build_batch
from core.batch.step_batch import BLOCK_SIZE, VOCAB, token_id

# Row colours: a request's tokens, block-table row and blocks in the pool share one colour, so the eye follows it from
# the flat buffer to the memory it owns. None of them means anything else on the page (no state's colour: generating
# blue, padding orange, prefill sky blue, recompute yellow; no policy's: static pink, continuous green, ...), all dark
# enough for white letters (tests/test_ragged_and_blocks.py checks both).
ROW_COLORS = ("#7A6A00", "#1B6B7A", "#8C510A", "#6A3D9A", "#A50026", "#3F5F1F")
MAX_CELLS = 8  # a longer prefill shows its first and last tokens around an ellipsis; the data attributes hold all
MAX_ROWS = 16  # rows drawn; a 64-slot batch says how many more there are
MAX_POOL = 256  # blocks drawn in the pool strip


LIST_LIMIT = 24  # the arrays table's positions and token_ids, then an ellipsis
INTRO = (
    "<h3>The batch at the cursor</h3><p>What the engine actually runs at this step. Continuous batching "
    "lays every running request's new tokens end to end in one flat buffer (a newcomer's whole prompt, "
    "everyone else one token); <code>cu_seqlens</code> marks where each request's tokens start, and each "
    "request reads its keys and values from its own KV blocks. Static batching computes a rectangle: every "
    "member is a row, finished ones included. Hover a request in the timeline to find it here.</p>"
)


CLOCK_HTML = (  # on a clock the batch view says why it shows no batch
    '<div class="bv-batches" data-batch-step="clock"><p class="bv-batch-empty">On a clock the cursor '
    "is a time, not a step: switch the time axis to steps to see the batch each step builds.</p></div>"
)


def _default(fn, name: str) -> int:
    return inspect.signature(fn).parameters[name].default


def _token_id_terms() -> dict[str, int]:
    """Return token_id as (request * a + position * b + c) % vocab, read off the function itself.

    token_id is affine modulo the vocabulary, so three probes give its terms (mod vocab, which is all that matters);
    the probes below check the form, so a change to token_id that is not affine fails here, not silently in the page.
    """
    c = token_id(0, 0)
    a, b = (token_id(1, 0) - c) % VOCAB, (token_id(0, 1) - c) % VOCAB
    for i, p in ((3, 5), (997, 4093), (12, 0)):
        if token_id(i, p) != (i * a + p * b + c) % VOCAB:
            raise ValueError("core.batch.step_batch.token_id is no longer affine: app/web/batch.js needs its new form")
    return {"request": a, "position": b, "offset": c, "vocab": VOCAB}


def batch_config() -> dict:
    """Return what app/web/batch.js needs from Python: sizes, limits, colours, texts and build_batch's marked source."""
    lines = chapter.source_slice(build_batch, "def build_batch", "slot_mapping.extend")
    marks = chapter._marked(lines, chapter.BUILD_MARKS)
    return {
        "block_size": BLOCK_SIZE,
        "token_id": _token_id_terms(),
        "row_colors": list(ROW_COLORS),
        "max_cells": MAX_CELLS,
        "max_rows": MAX_ROWS,
        "max_pool": MAX_POOL,
        "list_limit": LIST_LIMIT,  # the arrays table's positions and token_ids
        "note_limit": _default(chapter._short, "limit"),  # build_batch's notes
        "source": {"lines": lines, "marks": [marks.get(i) for i in range(len(lines))]},
        "clock_html": CLOCK_HTML,
        "pool": {"titles": pool_at.TITLES, "too_big": pool_at.TOO_BIG},
    }
