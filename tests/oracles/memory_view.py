"""The Memory tab's three runs at a step: the oracle app/web/tabs/memory.js is tested against (no page uses it)

Each mode's timeline as a table, the pool box by box, memory's decisions in words (app/memory/view.py's runs).
"""

from __future__ import annotations

import html

from app.memory.lesson import CELL, TITLES, step_run, waits_of
from app.page.words import plural
from core.sched.policies import get_policy
from core.sched.run import GENERATING, IDLE, Run
from core.sched.schedule_record import Schedule
from core.sched.waits import Wait
from core.states import PADDING
from tests.oracles.pool_view import pool_boxes, pool_words


def _label(run: Run, i: int) -> str:
    return html.escape(run.requests[i].id)


def _cells_by_step(run: Run, width: int) -> list[list[tuple[int, int]]]:
    """Return, per slot and step, (state, request or -1)."""
    grid = [[(IDLE, -1)] * width for _ in range(run.slots)]
    if run.cells is not None:
        spans = run.cells.tolist()
    else:
        spans = [
            (i, int(run.slot[i]), int(run.start[i]), int(run.finish[i]), GENERATING) for i in range(len(run.requests))
        ]
        spans += [
            (i, int(run.slot[i]), int(run.finish[i]), int(run.release[i]), PADDING)
            for i in range(len(run.requests))
            if run.release[i] > run.finish[i]
        ]
    for i, slot, lo, hi, state in spans:
        for t in range(lo, min(hi, width)):
            grid[slot][t] = (state, i)
    return grid


def timeline_html(mode: str, s: Schedule, step: int, width: int, blocks: int) -> str:
    """Return one mode's timeline as a table: a letter per cell, blocked admissions dashed, KV use underneath."""
    run = step_run(s)
    grid = _cells_by_step(run, width)
    waits = {(w.slot, w.step): w for w in waits_of(s)}
    rows = []
    for slot in range(run.slots):
        tds = []
        for t in range(width):
            state, i = grid[slot][t]
            css, words = CELL[state]
            classes = [css] + (["cursor"] if t == step else []) + (["future"] if t > step else [])
            title = f"slot {slot}, step {t}: " + (f"{run.requests[i].id} {words}" if i >= 0 else words)
            if t > step:  # the playback curtain, as on the simulator's timelines: the future is not shown yet
                title = f"slot {slot}, step {t}: not yet played"
            text = _label(run, i) if i >= 0 else ""
            if (slot, t) in waits and t <= step:
                w = waits[(slot, t)]
                classes.append("blocked")
                why = f"{w.free} free but the longest run is {w.longest_run}" if w.hole else f"{w.free} free"
                title += f"; {run.requests[w.request].id} waits for memory: needs {plural(w.needed, 'block')}, {why}"
                text = "⊘"
            tds.append(f'<td class="{" ".join(classes)}" title="{html.escape(title)}">{text}</td>')
        rows.append(f'<tr><th scope="row">slot {slot}</th>{"".join(tds)}</tr>')
    used = {int(start): int(b) for start, b in zip(s.pass_start.tolist(), s.pass_blocks.tolist())}
    bars = "".join(
        f'<td class="kv" title="step {t}: {used.get(t, 0)} of {blocks} blocks"><span style="height:'
        f'{round(26 * used.get(t, 0) / blocks) if t <= step else 0}px"></span></td>'
        for t in range(width)
    )
    rows.append(f'<tr><th scope="row">KV blocks</th>{bars}</tr>')
    return (
        f'<div class="bv-mem-frame"><table class="bv-mem-grid" data-mode="{mode}" '
        f'aria-label="{html.escape(TITLES[mode])}: slots by step">{"".join(rows)}</table></div>'
    )


def pool_html(mode: str, s: Schedule, step: int) -> str:
    """Return the pool during the pass at `step`: one box per block, its owner's letter, free blocks solid-edged."""
    run = step_run(s)
    passes = [p for p, start in enumerate(s.pass_start.tolist()) if int(start) == step]
    owners = s.pool_maps[passes[0]] if passes else (-1,) * s.memory.kv_blocks
    boxes = pool_boxes(owners, [_label(run, i) for i in range(len(run.requests))], "held", "free")
    words = f"step {step}: " + pool_words(owners, mode == "contiguous")
    return (
        f'<div class="bv-pool" data-pool="{mode}" role="img" aria-label="{html.escape(words)}">{boxes}</div>'
        f'<p class="bv-muted" data-pool-words="{mode}">{html.escape(words)}</p>'
    )


def _held_before(s: Schedule, p: int, request: int) -> int:
    """Return the blocks `request` held in the pass before pass `p` (0 at the first pass)."""
    return sum(1 for o in s.pool_maps[p - 1] if o == request) if p else 0


def wait_words(s: Schedule, w: Wait) -> str:
    """Return why a request waits for memory at a step: too few blocks free, or (contiguous) free blocks in holes."""
    name = s.requests[w.request].id
    if get_policy(s.policy).forms_batches:  # a batch's row, not one request's blocks
        head = f"{name} waits for memory: one more row of the batch needs {plural(w.needed, 'block')}"
    else:
        head = f"{name} waits for memory: it needs {plural(w.needed, 'block')}"
    if w.hole:
        return (
            f"{head}; {w.free} are free but in holes, the longest free run {w.longest_run} (a contiguous cache "
            "needs them in one run)"
        )
    if not w.free:
        return f"{head} and none is free"
    return f"{head} and only {w.free} {'is' if w.free == 1 else 'are'} free"


def events_text(s: Schedule, step: int) -> list[str]:
    """Return memory at `step` in words: who was preempted and why, and every request waiting for memory, with why.

    A wait is spoken at every step it lasts (the timeline's ⊘), not only the step it began, with its reason: too few
    free blocks, or enough free blocks in holes (a contiguous cache's).
    """
    names = [r.id for r in s.requests]
    out = []
    for e in s.events:
        if e.kind != "preempt" or int(s.pass_start[e.step]) != step:
            continue
        victim, prompt = names[e.request], max(1, s.requests[e.request].prompt_tokens)
        freed = _held_before(s, e.step, e.request)
        out.append(
            f"step {step}: {names[e.needed_by]} needs a new block and none is free; {victim}, admitted last, is "
            f"preempted: its {plural(freed, 'block')} freed, it goes back to the front of the queue, and when it "
            f"returns it recomputes the KV of its prompt ({plural(prompt, 'token')}) and of the "
            f"{plural(e.tokens, 'token')} it had generated"
        )
    spoken = set()
    for w in waits_of(s):
        if w.step == step and w.request not in spoken:  # static waits per empty slot: one line per request
            spoken.add(w.request)
            out.append(f"step {step}: {wait_words(s, w)}")
    return out


def _before_html(mode: str, s: Schedule, step: int, log: list[str]) -> str:
    """Return the pool in the pass before `step`, when memory decided something at `step`: before beside after."""
    if not log or step == 0:
        return ""
    return "<p class='bv-muted'>Before this step's decisions:</p>" + pool_html(mode, s, step - 1).replace(
        'data-pool="', 'data-pool-before="'
    ).replace('data-pool-words="', 'data-pool-before-words="')


def mode_html(mode: str, s: Schedule, step: int, width: int, blocks: int) -> str:
    """Return one mode's block: title with figures, its timeline, the pool at the cursor, memory's decisions."""
    log = events_text(s, step)
    log_html = "".join(f"<li>{html.escape(line)}</li>" for line in log) or "<li>no memory decision at this step</li>"
    return (
        f'<section class="bv-mem-mode" data-mem-mode="{mode}"><h3>{TITLES[mode]}</h3>'
        f"{timeline_html(mode, s, step, width, blocks)}{pool_html(mode, s, step)}{_before_html(mode, s, step, log)}"
        f'<ul class="bv-mem-log" data-mem-log="{mode}">{log_html}</ul></section>'
    )
