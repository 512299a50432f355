"""The KV pool at the cursor, each block its owner's letter, in plain Python: the oracle of batch.js's pool."""

from __future__ import annotations

import html

from app.simulator.pool_at import TITLES, TOO_BIG
from core import Run
from core.kv.memory import longest_free_run


def pool_boxes(owners, names: list[str], held: str, free: str) -> str:
    """Return one box per block: its owner's (escaped) name, or an empty free box; `held`/`free` are CSS classes."""
    return "".join(
        f'<span class="{held}" title="block {b}: {names[o]}">{names[o]}</span>'
        if o >= 0
        else f'<span class="{free}" title="block {b}: free"></span>'
        for b, o in enumerate(owners)
    )


def pool_words(owners, longest: bool) -> str:
    """Return the pool in words: blocks held, free, and with `longest` the longest free run (where holes matter)."""
    free = sum(1 for o in owners if o < 0)
    words = f"{len(owners) - free} of {len(owners)} blocks held, {free} free"
    return words + (f", the longest free run {longest_free_run(owners)}" if longest and free else "")


def _key(run: Run) -> str:
    return "static" if run.rules.forms_batches else run.schedule.memory.allocation  # a batch reserves whole rows


def pool_html(run: Run, owners: list[tuple[int, ...]] | None, step: int) -> str:
    """Return one mode's pool at `step`: a box per block with its owner's letter, and the counts in words."""
    key = _key(run)
    head = f'<div class="bv-batch-title">{TITLES[key]}: the KV pool at step {step}</div>'
    if owners is None:
        return f'<section class="bv-batch" data-kvpool="{key}">{head}{TOO_BIG}</section>'
    at = owners[step] if step < len(owners) else (-1,) * run.schedule.memory.kv_blocks
    boxes = pool_boxes(at, [html.escape(r.id) for r in run.requests], "bv-kvblock", "bv-kvblock bv-kvfree")
    words = pool_words(at, key != "paged")
    return (
        f'<section class="bv-batch" data-kvpool="{key}">{head}<div class="bv-kvpool" role="img" '
        f'aria-label="{words}">{boxes}</div><p class="bv-muted">{words}</p></section>'
    )


def pools_html(runs: dict[str, Run], owners: dict[str, list | None], mode: str, step: int) -> str:
    """Return both modes' pools at `step`, the mode shown first, under a line saying why the batch view left."""
    order = [mode, runs[mode].rules.versus]  # the mode shown first, then the one it is compared with
    parts = "".join(pool_html(runs[m], owners[m], step) for m in order)
    return (
        f'<div class="bv-batches" data-batch-step="{step}" data-pool-step="{step}"><p class="bv-muted">On a '
        "limited KV pool memory decides who runs: here is each block's owner at the cursor (the ragged batch's "
        f"own block tables assume a pool that never runs out; set the pool to 0 to see them).</p>{parts}</div>"
    )
