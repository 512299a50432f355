"""The Memory tab's data: the example's three runs on one pool as flat arrays, drawn by app/web/tabs/memory.js.

Per pool size (the slider's few values) the server computes the runs once and sends this JSON, shared by every
session and embedded in the exported page; the step at the cursor is the browser's, so a step costs the server
nothing. Python's builders of the same HTML are the test oracle (tests/oracles/memory_view.py).
"""

from __future__ import annotations

import json
from functools import lru_cache

from app.memory.lesson import (
    CELL,
    MAX_BLOCKS,
    MIN_BLOCKS,
    MODES,
    TITLES,
    figures,
    lesson_html,
    runs_for,
    step_run,
    waits_of,
)
from core.sched.policies import get_policy


def _grid(run, width: int) -> list[int]:
    """Return each slot's (state, request or -1) at every step, flat: what the Memory tab's table draws."""
    grid = [[0, -1] * width for _ in range(run.slots)]
    if run.cells is not None:
        spans = run.cells.tolist()
    else:
        n = len(run.requests)
        spans = [(i, int(run.slot[i]), int(run.start[i]), int(run.finish[i]), 1) for i in range(n)]
        spans += [(i, int(run.slot[i]), int(run.finish[i]), int(run.release[i]), 2) for i in range(n)
                  if run.release[i] > run.finish[i]]  # fmt: skip
    for i, slot, lo, hi, state in spans:
        for t in range(lo, min(hi, width)):
            grid[slot][2 * t : 2 * t + 2] = [state, i]
    return [x for row in grid for x in row]


def _mode(mode: str, blocks: int, width: int) -> dict:
    """Return one mode's run on the pool: its cells, waits, blocks used, the pool at each step, its preemptions."""
    s = runs_for(blocks)[mode]
    run = step_run(s)
    starts = [int(t) for t in s.pass_start.tolist()]
    used = dict(zip(starts, (int(b) for b in s.pass_blocks.tolist())))
    free = [-1] * s.memory.kv_blocks
    first_pass = {}
    for p, t in enumerate(starts):
        first_pass.setdefault(t, p)
    pools = [list(s.pool_maps[first_pass[t]]) if t in first_pass else free for t in range(width)]
    preempts = []
    for e in s.events:
        if e.kind == "preempt":
            freed = sum(1 for o in s.pool_maps[e.step - 1] if o == e.request) if e.step else 0
            preempts.append([starts[e.step], e.request, e.needed_by, e.tokens, freed])
    return {
        "title": TITLES[mode],
        "batches": get_policy(s.policy).forms_batches,
        "contiguous": mode == "contiguous",
        "slots": run.slots,
        "grid": _grid(run, width),
        "waits": [[w.step, w.slot, w.request, w.needed, w.free, w.longest_run, int(w.hole)] for w in waits_of(s)],
        "used": [used.get(t, 0) for t in range(width)],
        "pools": [o for at in pools for o in at],
        "preempts": preempts,
    }


@lru_cache(maxsize=MAX_BLOCKS - MIN_BLOCKS + 1)
def memory_json(blocks: int) -> str:
    """Return the Memory tab's view of a pool of `blocks` blocks as JSON (app/web/view.schema.json's sibling)."""
    width = max(f.drain for f in figures(blocks).values()) + 1
    requests = next(iter(runs_for(blocks).values())).requests
    return json.dumps(
        {
            "blocks": blocks,
            "width": width,
            "ids": [r.id for r in requests],
            "prompt": [max(1, r.prompt_tokens) for r in requests],
            "cells": {str(state): list(words) for state, words in CELL.items()},
            "lesson": lesson_html(blocks),
            "modes": {mode: _mode(mode, blocks, width) for mode in MODES},
        },
        separators=(",", ":"),
    )
