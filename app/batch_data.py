"""The batch view's constants for assets/batch.js, read from the Python that builds the same HTML (its oracle)."""

from __future__ import annotations

import inspect
from types import SimpleNamespace

from core.ragged import build_batch
from core.step_batch import BLOCK_SIZE, VOCAB, token_id

from . import batch_view, chapter, pool_at


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
            raise ValueError("core.step_batch.token_id is no longer affine: assets/batch.js needs its new form")
    return {"request": a, "position": b, "offset": c, "vocab": VOCAB}


def _clock_html() -> str:
    # BatchView.html() reads only state.clock before it returns on a clock, so a stand-in state gives its text.
    return batch_view.BatchView.html(SimpleNamespace(state=SimpleNamespace(clock="ms")))


def batch_config() -> dict:
    """Return what assets/batch.js needs from Python: sizes, limits, colours, texts and build_batch's marked source."""
    lines = chapter.source_slice(build_batch, "def build_batch", "slot_mapping.extend")
    marks = chapter._marked(lines, chapter.BUILD_MARKS)
    return {
        "block_size": BLOCK_SIZE,
        "token_id": _token_id_terms(),
        "row_colors": list(batch_view.ROW_COLORS),
        "max_cells": batch_view.MAX_CELLS,
        "max_rows": batch_view.MAX_ROWS,
        "max_pool": batch_view.MAX_POOL,
        "list_limit": _default(batch_view._compact_list, "limit"),  # the arrays table's positions and token_ids
        "note_limit": _default(chapter._short, "limit"),  # build_batch's notes
        "source": {"lines": lines, "marks": [marks.get(i) for i in range(len(lines))]},
        "clock_html": _clock_html(),
        "pool": {"titles": pool_at.TITLES, "too_big": pool_at.TOO_BIG},
    }
