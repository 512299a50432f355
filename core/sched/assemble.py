"""The engine's records turned into a Schedule: per pass its clock, work and blocks; per request its passes; cells.

The loop keeps only flat lists of numbers (cells, stretches); what follows from them (an unlimited pool's counts,
blocks filled per pass, the cells of a run nobody left early) is computed here with NumPy, once, not in the loop.
"""

from __future__ import annotations

import numpy as np

from core.sched.schedule_record import Schedule
from core.states import GENERATING, PADDING, PAUSED, PREFILL

# A stretch of passes, as the loop records it (flat, STRETCH_FIELDS numbers each): its passes, their decoding rows
# (their context grows by that many tokens a pass), prefill tokens, the first pass's context, the clock at its start
# and at its end, the blocks held and the longest free run.
STRETCH_FIELDS = 8


def as_array(values: list, dtype) -> np.ndarray:
    """Return a flat list of numbers as an array (fromiter: about twice np.array's speed on a long list of ints)."""
    return np.fromiter(values, dtype=dtype, count=len(values))


def plain_cells(e, start: np.ndarray, first: np.ndarray, finish: np.ndarray, slot: np.ndarray) -> np.ndarray:
    """Return the cells of a schedule where nobody is preempted or paused, in the order the loop closes them.

    Each request (in FCFS order) generates in one cell from its first token's pass to its finish; a prompt that a
    token budget spread over passes prefills in a cell before it, from its start. At each boundary the loop closes
    the cells of the requests retiring, in slot order (the finish heap's), then the prefill cells of the prompts the
    boundary's pass completes, in admission order.
    """
    n = len(start)
    spread = np.flatnonzero(first > start) if first is not start else ()
    if not len(spread):  # every prompt in one pass: closed by finish, then slot (the general path: 2.5% of a run)
        order = np.lexsort((slot, finish))
        cells = np.zeros((n, 6), dtype=np.int64)
        cells[:, 0], cells[:, 1], cells[:, 2], cells[:, 3] = order, slot[order], start[order], finish[order]
        cells[:, 4] = GENERATING
        return cells
    who = np.concatenate((np.arange(n), spread))
    lo, hi = np.concatenate((first, start[spread])), np.concatenate((finish, first[spread]))
    prefills = np.arange(len(who)) >= n
    tie = np.concatenate((slot, np.array(e.adm, dtype=np.int64)[spread]))
    order = np.lexsort((tie, prefills, hi))
    cells = np.zeros((len(order), 6), dtype=np.int64)
    cells[:, 0], cells[:, 1], cells[:, 2], cells[:, 3] = who[order], slot[who[order]], lo[order], hi[order]
    cells[:, 4] = np.where(prefills[order], PREFILL, GENERATING)
    return cells


def unlimited_blocks(e, cells: np.ndarray, passes: int) -> np.ndarray:
    """Return the blocks an unlimited pool holds at each pass: what each running request was given at admission.

    Nobody is preempted, so each admission is a first (nothing generated yet) and holds its blocks until it
    finishes; its cells (a prompt's chunks, then its tokens) tile that span once.
    """
    prompt = np.array(e.P, dtype=np.int64)
    whole_life = e.pol.reserves_whole_life(e.memory.allocation)
    tokens = prompt + (np.array(e.RES, dtype=np.int64) if whole_life else 1)
    held = (-(-tokens // e.memory.block_size))[cells[:, 0]]
    diff = np.bincount(cells[:, 2], held, passes + 1) - np.bincount(cells[:, 3], held, passes + 1)
    return np.cumsum(diff)[:passes].astype(np.int64)  # float sums of integers far below 2**53: exact

def filled_blocks(e, cells: np.ndarray, passes: int) -> np.ndarray:
    """Return the blocks each pass's tokens fill: per non-padding cell, its prompt and tokens so far, plus one.

    A cell's count rises by one every block_size passes, so the counts are summed as a difference array (its
    first pass's count, one more at each pass that starts a block, its last count taken off where it ends):
    work in blocks crossed, not in cell-passes.
    """
    bs = e.memory.block_size
    live = cells[cells[:, 4] != PADDING]
    lo, hi = live[:, 2], live[:, 3]
    c = np.array(e.P, dtype=np.int64)[live[:, 0]] + live[:, 5] - lo + 1  # a cell holds c + q tokens at pass q
    first_count, last_count = -(-(c + lo) // bs), -(-(c + hi - 1) // bs)
    cross = lo + 1 + (1 - (c + lo + 1)) % bs  # its first pass after lo holding c + q = 1 (mod bs): a new block
    crossings = np.maximum(0, -(-(hi - cross) // bs))
    paused = live[:, 4] == PAUSED  # a paused row holds its prompt and tokens so far, and takes no new one
    if paused.any():
        still = -(-(c[paused] + lo[paused] - 1) // bs)
        first_count[paused], last_count[paused], crossings[paused] = still, still, 0
    within = np.arange(crossings.sum()) - np.repeat(np.cumsum(crossings) - crossings, crossings)
    at = np.repeat(cross, crossings) + bs * within
    size = passes + 1
    diff = np.bincount(lo, first_count, size) - np.bincount(hi, last_count, size) + np.bincount(at, minlength=size)
    return np.cumsum(diff)[:passes].astype(np.int64)  # float sums of integers far below 2**53: exact

def passes_of(e) -> tuple[np.ndarray, ...]:
    """Return per pass: start, end, decoding rows, prefill tokens, context, blocks held, longest free run."""
    passes = e.passes
    st = as_array(e.st, float).reshape(-1, STRETCH_FIELDS)
    lengths = st[:, 0].astype(np.int64)
    opens_at = np.cumsum(lengths) - lengths  # each stretch's first pass: the stretches tile the passes
    col = lambda i: np.repeat(st[:, i].astype(np.int64), lengths)  # noqa: E731 - exact: counts below 2**53
    age = np.arange(passes, dtype=np.int64) - np.repeat(opens_at, lengths)
    rows = col(1)
    begun = np.repeat(st[:, 4], lengths)
    if e.unit:
        starts = begun + age
        ends = starts + 1.0
    else:
        ends = np.repeat(st[:, 5], lengths)  # a one-pass stretch: costed by the scalar function as the loop did
        for at, costed in e.ends.items():
            ends[opens_at[at] : opens_at[at] + len(costed)] = costed
        starts = np.concatenate(([0.0], ends[:-1])) if passes else np.zeros(0)
        opens = age == 0  # a stretch's first pass starts where the clock stood (after an idle jump, say)
        starts[opens] = begun[opens]
    blocks = col(6)
    # A paged pool's longest free run is all its free blocks: the loop leaves it here (a contiguous pool's: its own).
    largest = e.memory.kv_blocks - blocks if e.limited and not e.pool.contiguous else col(7)
    return starts, ends, rows, col(2), col(3) + rows * age, blocks, largest

def bare_passes(e, start: np.ndarray, finish: np.ndarray) -> tuple[np.ndarray, ...]:
    """Return what `passes_of` returns for a run whose loop recorded no pass: plain, on an unlimited pool, on steps.

    Request k prefills in pass start[k] and decodes in each pass after it up to finish[k]; its context at pass q is
    its prompt and the q - start[k] tokens it has. A pass begins a step after the one before, or where nothing ran
    at the arrival of the latest it admits: t(q) = max(t(q-1) + 1, that arrival), a running maximum of t(q) - q
    (the first pass admits somebody, so the maximum starts at an arrival).
    """
    passes, size = e.passes, e.passes + 1
    prompt = np.array(e.P, dtype=np.int64)
    rows = np.cumsum(np.bincount(start + 1, minlength=size) - np.bincount(finish, minlength=size))[:passes]
    prefill = np.bincount(start, prompt, size)[:passes].astype(np.int64)  # float sums of integers: exact
    own = (prompt - start).astype(float)  # a decoding request's context at pass q: own + q
    context = np.cumsum(np.bincount(start + 1, own, size) - np.bincount(finish, own, size))[:passes].astype(np.int64)
    q = np.arange(passes, dtype=np.int64)
    latest = np.full(passes, -np.inf)
    np.maximum.at(latest, start, np.array(e.A, dtype=float))
    starts = q + np.maximum.accumulate(latest - q) if passes else np.zeros(0)
    zeros = np.zeros(passes, dtype=np.int64)  # an unlimited pool: no blocks held, no free run (unlimited_blocks)
    return starts, starts + 1.0, rows, prefill, context + rows * q, zeros, zeros.copy()


def assemble(e) -> Schedule:
    """Return the engine's Schedule: its flat records turned into arrays, in the order the requests were given."""
    n, passes = len(e.A), e.passes
    start, finish, slot = (as_array(xs, np.int64) for xs in (e.start, e.finish, e.slot))  # FCFS order
    if e.bare:
        starts, ends, rows, prefill, context, blocks, largest = bare_passes(e, start, finish)
    else:
        starts, ends, rows, prefill, context, blocks, largest = passes_of(e)
    first = as_array(e.first, np.int64) if e.pol.has_token_budget else start  # a whole prompt's pass gives a token
    if e.plain:
        cells = plain_cells(e, start, first, finish, slot)
    else:
        cells = as_array(e.cells, np.int64).reshape(-1, 6)
    if not e.limited and not e.pol.forms_batches and len(cells):
        blocks = unlimited_blocks(e, cells, passes)
    if not e.limited:
        token_blocks = np.zeros(passes, dtype=np.int64)
    elif e.paged_growth and not (e.pol.pauses_decoders or e.pol.has_token_budget):
        token_blocks = blocks.copy()  # each row's blocks grew one by one as its tokens filled them: no more, no fewer
    else:
        token_blocks = filled_blocks(e, cells, passes)
    release = as_array(e.release, np.int64) if e.pol.forms_batches else finish
    out_cells = cells[:, :5].copy()
    if e.in_order:  # the requests were given in FCFS order: the records are already in theirs
        back = slice(None)
    else:
        back = np.empty(n, dtype=np.int64)
        back[e.order] = np.arange(n)
        out_cells[:, 0] = as_array(e.order, np.int64)[cells[:, 0]]
    return Schedule(
        requests=e.requests,
        slots=e.slots,
        policy=e.pol,
        memory=e.memory,
        batch_timeout=e.timeout,
        token_budget=e.budget,
        cost="unit" if e.unit else e.cost.name,
        slot=slot[back].copy(),  # no two fields share an array
        start_pass=start[back].copy(),
        first_pass=first[back].copy(),
        finish_pass=finish[back].copy(),
        release_pass=release[back].copy(),
        cells=out_cells,
        pass_start=starts,
        pass_end=ends,
        pass_rows=rows,
        pass_prefill=prefill,
        pass_context=context,
        pass_blocks=blocks,
        pass_largest_free=largest,
        pass_token_blocks=token_blocks,
        events=tuple(e.events),
        recomputed_tokens=e.recomputed,
        pool_maps=tuple(e.maps) if e.record_pool else None,
    )
