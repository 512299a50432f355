"""The batch at the playback cursor in Python: the oracle app/web/batch.js is tested against (no page uses it).

Continuous's ragged batch and block tables, static's padded rectangle.
"""

from __future__ import annotations

import html

import panel as pn
import param
from bokeh.models import Div

from app.page.words import plural
from app.server.loop import on_document
from app.simulator.batch_data import CLOCK_HTML, INTRO, LIST_LIMIT, MAX_CELLS, MAX_POOL, MAX_ROWS, ROW_COLORS
from app.simulator.chapter import build_batch_at
from app.simulator.pool_at import owners_by_step
from app.simulator.state import SimState
from app.web.style import CSS
from core import Run
from core.batch.step_batch import BLOCK_SIZE, ContinuousBatches, ContinuousStep, StaticStep, static_step
from tests.oracles.pool_view import pools_html

__all__ = ["BatchView", "INTRO", "MAX_CELLS", "MAX_POOL", "MAX_ROWS", "ROW_COLORS"]


def inspected_step(step: int, window: int) -> int:
    """Return the step the cursor points at: the step about to run, or the window's last step at its end."""
    return max(0, min(step, window - 1))


def _attr(values) -> str:
    return ",".join(str(int(v)) for v in values)


def _label(run: Run, i: int) -> str:
    return html.escape(run.requests[i].id, quote=True)


def _cells(values: list[int], css: str) -> str:
    """Return one cell per value, or the first and last few around an ellipsis when there are many."""
    shown = values if len(values) <= MAX_CELLS else [*values[:4], None, *values[-2:]]
    hidden = len(values) - 6
    return "".join(
        f'<span class="bv-cell bv-more" title="{hidden} more">…</span>'
        if v is None
        else f'<span class="bv-cell {css}">{v}</span>'
        for v in shown
    )


def _count(n: int, noun: str) -> str:
    return f"{n} {noun}" + ("" if n == 1 else "s")


def _compact(values: list[int]) -> str:
    """Return a list of ids as ranges ('4-7 12'), which is how a block table reads when blocks come in runs."""
    parts, k = [], 0
    while k < len(values):
        j = k
        while j + 1 < len(values) and values[j + 1] == values[j] + 1:
            j += 1
        parts.append(str(values[k]) if j == k else f"{values[k]}-{values[j]}")
        k = j + 1
    return " ".join(parts)


def _title(run: Run) -> str:
    """Return the policy's label as a batch's title begins: "Continuous", "Static", "Shortest first"."""
    label = run.rules.label
    return label[:1].upper() + label[1:]


def continuous_html(run: Run, step: ContinuousStep) -> str:
    """Return the ragged batch: the flat token buffer cut by cu_seqlens, the arrays, block tables and the KV pool."""
    b = step.batch
    cu = b.cu_seqlens.tolist()
    rows = len(step.requests)
    head = (
        f'<div class="bv-batch-title">{_title(run)}, step {step.step}: one ragged batch of {plural(rows, "row")}, '
        f"{plural(cu[-1], 'token')}, no padding</div>"
    )
    if not step.requests:
        head = f'<div class="bv-batch-title">{_title(run)}, step {step.step}: no batch</div>'
        body = (
            '<p class="bv-batch-empty">Nobody is running at this step: the slots are idle'
            + (f", everything finished by step {run.drain}." if step.step >= run.drain else ".")
            + " Move the cursor back to see a batch.</p>"
        )
        return (
            f'<section class="bv-batch" data-policy="{run.policy}" data-step="{step.step}" data-cu-seqlens="0">'
            f"{head}{body}</section>"
        )
    color = {i: ROW_COLORS[row % len(ROW_COLORS)] for row, i in enumerate(step.requests)}
    segments, tables = [], []
    for row, i in enumerate(step.requests[:MAX_ROWS]):
        lo, hi = cu[row], cu[row + 1]
        positions = b.positions[lo:hi].tolist()
        kind = "prefill" if step.prefill[row] else "decode"
        blocks = [int(x) for x in b.block_tables[row] if x >= 0]
        name = _label(run, i)
        segments.append(
            f'<span class="bv-seg bv-{kind}" data-req="{name}" data-row="{row}" data-positions="{_attr(positions)}" '
            f'data-token-ids="{_attr(b.token_ids[lo:hi])}" style="--bv-row:{color[i]}" '
            f'title="{name}: {kind}, positions {positions[0]}-{positions[-1]}">'
            f'<span class="bv-cu">{lo}</span><span class="bv-seg-name">{name} {kind}</span>'
            f'<span class="bv-seg-cells">{_cells(positions, "bv-pos")}</span></span>'
        )
        tables.append(
            f'<div class="bv-table-row" data-req="{name}" data-blocks="{_attr(blocks)}" style="--bv-row:{color[i]}">'
            f'<span class="bv-seg-name">{name}</span> {b.context_lens[row]} tokens in {_count(len(blocks), "block")}: '
            f'<span class="bv-blocks">{_compact(blocks)}</span></div>'
        )
    more = len(step.requests) - MAX_ROWS
    if more > 0:
        segments.append(f'<span class="bv-more-rows">… {more} more rows</span>')
    segments.append(f'<span class="bv-cu bv-cu-end">{cu[-1]}</span>')
    pool = "".join(
        f'<span class="bv-block" data-block="{k}" data-req="{_label(run, o)}" style="--bv-row:{color.get(o)}" '
        f'title="block {k}: {_label(run, o)}"></span>'
        if o >= 0
        else f'<span class="bv-block bv-free" data-block="{k}" title="block {k}: free"></span>'
        for k, o in enumerate(step.block_owner[:MAX_POOL].tolist())
    )
    free = int((step.block_owner < 0).sum())
    arrays = (
        '<table class="bv-arrays">'
        f'<tr><th>cu_seqlens</th><td data-array="cu_seqlens">{" ".join(map(str, cu))}</td></tr>'
        f"<tr><th>positions</th><td>{_compact_list(b.positions.tolist())}</td></tr>"
        f"<tr><th>token_ids</th><td>{_compact_list(b.token_ids.tolist())}</td></tr></table>"
    )
    return (
        f'<section class="bv-batch" data-policy="{run.policy}" data-step="{step.step}" data-cu-seqlens="{_attr(cu)}">'
        f'{head}<div class="bv-flat">{"".join(segments)}</div>{arrays}'
        f'<div class="bv-subtitle">Block tables (KV blocks of {BLOCK_SIZE} tokens; a request only ever adds '
        f"blocks; nobody else's blocks move)</div>{''.join(tables)}"
        f'<div class="bv-subtitle">This view\'s own KV block pool: {len(step.block_owner)} blocks, enough for the '
        f"longest request in {_busy(min(run.slots, max(len(run.requests), 1)))} that can be "
        f"busy at once ({free} free; the simulator's pool above is the KV strip's)</div>"
        f'<div class="bv-pool">{pool}</div></section>'
    )


def _compact_list(values: list[int], limit: int = LIST_LIMIT) -> str:
    if len(values) <= limit:
        return " ".join(map(str, values))
    return " ".join(map(str, values[:limit])) + f" … ({len(values) - limit} more)"


def _busy(slots: int) -> str:
    """Return the slots that can be busy at once, in words ("the one slot" where there is one)."""
    return "the one slot" if slots == 1 else f"each of the {slots} slots"


def static_html(run: Run, step: StaticStep) -> str:
    """Return the padded rectangle: one row per member (left-padded prompts first), padding rows marked."""
    if not step.requests:
        return (
            f'<section class="bv-batch" data-policy="{run.policy}" data-step="{step.step}" data-rows="0" '
            'data-useful-rows="0">'
            f'<div class="bv-batch-title">{_title(run)}, step {step.step}: no batch is running</div>'
            '<p class="bv-batch-empty">The slots are idle until the next batch forms.</p></section>'
        )
    useful_rows = sum(step.live)
    rows = []
    for i, alive, n in list(zip(step.requests, step.live, step.new_tokens))[:MAX_ROWS]:
        name = _label(run, i)
        pad = step.width - n
        if not alive:
            cells = '<span class="bv-cell bv-padrow">padding</span>'
        elif step.width <= MAX_CELLS:
            cells = '<span class="bv-cell bv-leftpad"></span>' * pad + '<span class="bv-cell bv-tok"></span>' * n
        else:
            cells = (f'<span class="bv-cell bv-leftpad bv-wide">{pad} pad</span>' if pad else "") + (
                f'<span class="bv-cell bv-tok bv-wide">{n} tokens</span>'
            )
        rows.append(
            f'<div class="bv-rect-row" data-req="{name}" data-live="{int(alive)}">'
            f'<span class="bv-seg-name">{name}</span>{cells}</div>'
        )
    first = step.width > 1 or int(run.start[step.requests[0]]) == step.step
    lined_up = "the prompts, lined up on the right with pad tokens before the shorter ones"
    what = lined_up if first else "one token per row"
    count = len(step.requests)
    return (
        f'<section class="bv-batch" data-policy="{run.policy}" data-step="{step.step}" data-rows="{count}" '
        f'data-useful-rows="{useful_rows}" data-computed="{step.computed_tokens}" data-useful="{step.useful_tokens}">'
        f'<div class="bv-batch-title">{_title(run)}, step {step.step}: a padded rectangle of {plural(count, "row")} x '
        f"{step.width} ({what})</div>"
        f'<div class="bv-rect">{"".join(rows)}</div>'
        f'<p class="bv-rect-sum">{useful_rows} of {plural(count, "row")} did useful work; '
        f"{plural(step.computed_tokens, 'token')} computed, {step.useful_tokens} useful.</p></section>"
    )


class BatchView(pn.viewable.Viewer):
    """The ragged batch (continuous) and the padded rectangle (static) at the cursor: the oracle of app/web/batch.js.

    The page draws the batch in the browser (app/web/batch.js); this view builds the same HTML in Python.
    """

    state = param.ClassSelector(class_=SimState)

    def __init__(self, **params):
        super().__init__(**params)
        self.div = Div(name="batch", stylesheets=[CSS], sizing_mode="stretch_width")
        self._walkers: dict[str, ContinuousBatches] = {}  # per policy: playback steps forward, not from 0
        self._refresh()
        self.state.param.watch(lambda *_e: on_document(self._refresh), ["step", "runs", "mode", "window", "clock"])

    def html(self) -> str:
        """Return both batches at the cursor's step, the mode shown first."""
        s = self.state
        if s.clock == "ms":  # the cursor is a time there; this view is built per step, so it says so, not a step
            return CLOCK_HTML
        t = inspected_step(s.step, s.window)
        if s.kv_blocks:  # this view's block tables never run short: beside a limited pool, the engine's pool
            return pools_html(s.runs, {m: owners_by_step(r) for m, r in s.runs.items()}, s.mode, t)
        shown = (s.mode, s.run.rules.versus)  # the mode shown first, then the one it is compared with
        return f'<div class="bv-batches" data-batch-step="{t}">{"".join(self._batch(p, t) for p in shown)}</div>'

    def _batch(self, policy: str, t: int) -> str:
        """Return one policy's batch at step t: a padded rectangle for a batch policy, else the ragged batch."""
        run = self.state.runs[policy]
        if run.rules.forms_batches:
            return static_html(run, static_step(run, t))
        walker = self._walkers.get(policy)
        if walker is None or walker.run is not run:
            walker = self._walkers[policy] = ContinuousBatches(run)
        ragged = walker.at(t)
        return continuous_html(run, ragged) + build_batch_at(ragged.batch, t)

    def _refresh(self, *_events) -> None:
        self.div.text = self.html()

    def __panel__(self):
        intro = pn.pane.HTML(INTRO, sizing_mode="stretch_width", stylesheets=[CSS])
        return pn.Column(intro, pn.pane.Bokeh(self.div, sizing_mode="stretch_width"), sizing_mode="stretch_width")
