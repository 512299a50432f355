"""Views on a SimState: the settings behind the disclosures, the head-to-head panel and the page's messages."""

from __future__ import annotations

import html

import panel as pn
import param

from app.page.words import plural
from app.simulator.plots import H2H_GROUPS, H2H_TIMED_GROUPS
from app.simulator.state import BLOCK_SIZE, SimState
from app.web.style import CSS
from core import Metrics, Run, compute_metrics
from core.clock.hardware import ACCELERATOR_OPTIONS, MODEL_OPTIONS
from core.measure.losses import Losses, losses
from core.measure.metrics import latency_so_far
from core.sched.policies import CHAPTER_PAIR, get_policy
from core.sched.timed import TimedMetrics, TimedRun, timed_metrics


def h2h_timed_rows(static: TimedMetrics, continuous: TimedMetrics, n: int) -> list[tuple[str, str, str, str]]:
    """Return the head-to-head's rows on a clock, every figure in ms (or per second), over each mode's drain."""

    def ms(key: str, stat: str) -> tuple[str, str]:
        return f"{getattr(static, key)[stat]:,.1f}", f"{getattr(continuous, key)[stat]:,.1f}"

    return [
        ("drain_ms", "All done at (ms)", f"{static.drain_ms:,.1f}", f"{continuous.drain_ms:,.1f}"),
        ("tokens_per_s", "Tokens/s", f"{static.tokens_per_s:,.0f}", f"{continuous.tokens_per_s:,.0f}"),
        ("ttft_p50", "TTFT p50 (ms)", *ms("ttft_ms", "p50")),
        ("e2e_mean", f"Avg latency, all {n} requests (ms, each to its finish)", *ms("e2e_ms", "mean")),
        ("e2e_p99", "End-to-end p99 (ms)", *ms("e2e_ms", "p99")),
    ]


def _latency(value: float | None) -> str:
    return "–" if value is None else f"{value:.1f}"


def h2h_rows(
    static: Metrics, continuous: Metrics, static_loss: Losses, continuous_loss: Losses, names=CHAPTER_PAIR
) -> list[tuple]:
    """Return the head-to-head's rows (key, label, first cell, second cell), every figure from the core.

    The two are the chapter's pair (static, continuous) unless `names` says which policies they are.

    Latency compares the modes over every request, each to its own finish: a mode that completes fewer in the
    window never looks faster for it. The chapter's latency over the completed ones alone is labelled so.
    """
    n = static.requests

    def completed_only(m: Metrics, key: str) -> str:
        return f'<span data-h2h="{key}">{_latency(m.avg_latency)}</span> <span class="bv-of">of {m.completed}</span>'

    return [
        ("completed", "Completed in window", f"{static.completed}/{n}", f"{continuous.completed}/{n}"),
        ("utilisation", "GPU utilisation", f"{static.utilisation:.0%}", f"{continuous.utilisation:.0%}"),
        ("drain", "All done at step", f"{static.drain_steps}", f"{continuous.drain_steps}"),
        ("avg_wait", "Avg queue wait (steps, those started)", _latency(static.avg_wait), _latency(continuous.avg_wait)),
        (
            "avg_latency_all",
            f"Avg latency, all {n} requests (steps, each to its finish)",
            _latency(static.avg_latency_all),
            _latency(continuous.avg_latency_all),
        ),
        (
            None,
            # Explained once, here: the chapter's own figure (25.0 against 31.9 on its traffic), kept for it.
            "Avg latency of the completed only (steps; the chapter's figure: it leaves out whoever has not "
            "finished, so it can favour the mode that finished fewer)",
            completed_only(static, f"{names[0]}-avg_latency"),
            completed_only(continuous, f"{names[1]}-avg_latency"),
        ),
        ("padding", "Padding (slot-steps)", f"{static_loss.padding}", f"{continuous_loss.padding}"),
        (
            "idle_while_waiting",
            "Empty slots a waiting request could have taken (slot-steps)",
            f"{static_loss.idle_while_waiting}",
            f"{continuous_loss.idle_while_waiting}",
        ),
        (
            "boundary_wait",
            "Waiting with a slot free or padding (request-steps)",
            f"{static_loss.boundary_wait}",
            f"{continuous_loss.boundary_wait}",
        ),
    ]


# The first screen's rows and their short labels, the chapter's figures first (completed, utilisation and the
# average latency of the completed, all over the window: its 25.0 against 31.9), then every request's to its finish;
# the full table, with the long labels, is further down.
COMPACT = {
    "completed": "Completed",
    "utilisation": "GPU utilisation",
    "avg_latency_completed": "Avg latency of the completed (steps)",
    "drain": "All done at step",
    "avg_latency_all": "Avg latency, all, each to its finish (steps)",
}
COMPACT_GROUPS = {  # the row each group starts at, and its heading
    "completed": "The chapter's figures, over the window",
    "drain": "Every request, each to its finish",
}
COMPACT_TIMED = {"drain_ms": "All done at (ms)", "tokens_per_s": "Tokens/s", "e2e_mean": "Avg latency, all (ms)"}


# The full table's three rows of lost time, told apart once (the sentences-true issue, item 8).
LOSS_NOTE = (
    '<p class="bv-muted bv-loss-note">Three counts of lost time: <b>padding</b> and <b>empty slots a waiting request '
    "could have taken</b> (at each step the fewer of the empty slots and the requests waiting) count slot-steps, a "
    "slot's time (one slot for one step is one slot-step); <b>waiting with a slot "
    "free or padding</b> counts request-steps, a waiting request's time (three requests waiting one step beside one "
    "empty slot are 1 slot-step and 3 request-steps). Padding here is a finished request keeping its slot until its "
    "batch ends; the pad tokens that line up a static batch's prompts (the batch view) are not counted in it.</p>"
)


def averages_note(static: Run, continuous: Run, window: int) -> str:
    """Return why the page shows three average latencies of one run, for each mode, each figure from its run.

    The card above the timelines (at the window's last step, where the page opens) shows the mode the learner picks,
    so the note speaks of both: for each, the card, the table's "all" row and the chapter's completed-only row average
    the same requests' times measured three ways; where every request finishes inside the window the three agree.
    """
    parts = [
        '<p class="bv-muted bv-averages">Three average latencies of the same requests, measured three ways: the '
        "card above counts every request that has arrived by the step shown, an unfinished one up to that step (it "
        f"shows the mode you pick, at the step you play to; the figures below are its reading at step {window - 1}); "
        "&quot;Avg latency, all&quot; counts every request to its own finish; the chapter's completed-only figure "
        "counts only those finished inside the window."
    ]
    for run in (continuous, static):
        m, label = compute_metrics(run, window), html.escape(get_policy(run.policy).label)
        attrs = f'data-policy="{html.escape(run.policy)}"'
        if m.completed == m.requests:
            parts.append(
                f' <span data-averages="agree" {attrs}>Under {label} every request finishes inside the window, so '
                f"its three read the same: <b>{m.avg_latency_all:.1f}</b> steps.</span>"
            )
            continue
        so_far = latency_so_far(run.arrival, run.finish, window)
        done = "–" if m.avg_latency is None else f"{m.avg_latency:.1f}"
        parts.append(
            f' <span data-averages="three" {attrs}>Under {label}: <b>{so_far:.1f}</b> on the card with {label} '
            f"picked, at step {window - 1}; <b>{m.avg_latency_all:.1f}</b> to each finish (the last finishes at step "
            f"{run.drain}), <b>{done}</b> over the {plural(m.completed, 'request')} finished inside the window.</span>"
        )
    return "".join(parts) + "</p>"


def compact_caption(window: int | None) -> str:
    """Return the first screen's head-to-head caption: what it counts (the window's steps, or each drain on a clock)."""
    if window is None:
        return "Head to head, same traffic, each mode to its drain"
    return f"Head to head, same traffic and slots (the window: steps 0–{window - 1})"


def _short(rows: list[tuple], labels: dict[str, str]) -> list[tuple]:
    """Return the rows `labels` names, in its order, with its short labels."""
    by_key = {row[0]: row for row in rows}
    return [(key, label, by_key[key][2], by_key[key][3]) for key, label in labels.items() if key in by_key]


def _h2h_table(
    rows: list[tuple],
    caption: str = "Same traffic and same slots, over the window shown",
    names: tuple[str, str] = CHAPTER_PAIR,
    groups: dict[str, str] | None = None,
) -> str:
    """Return the head-to-head table of two policies' cells, `names` their columns (the chapter's pair by default).

    `groups`: a heading row before the row of each key it names.
    """
    a, b = names
    groups = groups or {}

    def cell(key: str | None, policy: str, value: str) -> str:
        return f'<td data-h2h="{policy}-{key}">{value}</td>' if key else f"<td>{value}</td>"

    def heading(key: str | None) -> str:
        text = groups.get(key)
        return f'<tr class="bv-h2h-group"><th colspan="3" scope="colgroup">{text}</th></tr>' if text else ""

    body = "".join(
        f'{heading(key)}<tr><th scope="row">{label}</th>{cell(key, a, s)}{cell(key, b, c)}</tr>'
        for key, label, s, c in rows
    )
    return (
        f'<table class="bv-h2h"><caption>{caption}</caption>'
        f'<thead><tr><td></td><th scope="col">{get_policy(a).label}</th><th scope="col">{get_policy(b).label}</th>'
        "</tr></thead>"
        f"<tbody>{body}</tbody></table>"
    )


def _slider(state: SimState, name: str, label: str, end: int) -> pn.widgets.IntSlider:
    """Return a slider over the chapter's range (1..end), widened to the parameter's bounds when a URL asks beyond."""
    top = state.param[name].bounds[1]
    slider = pn.widgets.IntSlider.from_param(
        state.param[name], label=label, end=end if getattr(state, name) <= end else top
    )
    state.param.watch(lambda e: e.new > slider.end and setattr(slider, "end", top), name)
    return slider


MEMORY_NOTE = (
    '<p class="bv-muted">With a pool, memory decides who runs: under each timeline a strip shows the blocks held at '
    "each step; <b>paged</b> requests take a block at a time as they grow, <b>contiguous</b> ones reserve one "
    "unbroken run for their prompt and the cap on answer length at admission; static reserves whole rows. A pool "
    "smaller than the least the traffic fits in is raised to it. The clock view runs on an unlimited pool.</p>"
)


class Controls(pn.viewable.Viewer):
    """The settings behind the disclosures: the rest of the traffic, the static timeout, both timelines, the clock.

    Mode, slots and seed, the three the chapter's Try-it uses, are the widget's own (app/simulator/widget.py).
    """

    state = param.ClassSelector(class_=SimState)

    def _show_generator(self, *_events) -> None:
        for widget in self.generator:  # a fixed trace (the worked example) has no count or lengths to move
            widget.visible = self.state.generator_applies

    def more_traffic(self) -> pn.Column:
        """Return the traffic's other settings and the second timeline's switch (made when first shown)."""
        s = self.state
        self.generator = [
            _slider(s, "requests", "Requests", 64),
            pn.widgets.Select.from_param(s.param.lengths, label="Output lengths"),
            pn.widgets.IntSlider.from_param(s.param.mean_tokens, label="Mean output length (tokens)"),
            pn.widgets.IntSlider.from_param(s.param.arrival_window, label="Arrival window (steps)", end=64),
            pn.widgets.IntSlider.from_param(s.param.priority_share, label="High priority share (%), for priority"),
        ]
        s.param.watch(self._show_generator, ["trace", "trace_name"])
        self._show_generator()
        return pn.Column(
            *self.generator,
            pn.widgets.Checkbox.from_param(s.param.both, label="Show both modes on one time axis"),
        )

    def scheduler(self) -> pn.Column:
        """Return what the schedulers obey beside the slots: the KV pool, how requests take it, the static timeout."""
        s = self.state
        return pn.Column(
            _slider(s, "kv_blocks", f"KV pool, blocks of {BLOCK_SIZE} tokens (0: unlimited)", 64),
            pn.widgets.RadioButtonGroup.from_param(s.param.allocation, label="KV allocation"),
            pn.pane.HTML(MEMORY_NOTE, sizing_mode="stretch_width", stylesheets=[CSS]),
            pn.widgets.IntSlider.from_param(s.param.batch_timeout, label="Static batch timeout (steps)"),
        )

    def on_a_clock(self) -> pn.Column:
        """Return the time axis and its roofline presets."""
        s = self.state
        return pn.Column(
            pn.widgets.RadioButtonGroup.from_param(s.param.clock, label="Time axis"),
            pn.widgets.Select.from_param(s.param.accelerator, label="Accelerator", options=ACCELERATOR_OPTIONS),
            pn.widgets.Select.from_param(s.param.model_shape, label="Model", options=MODEL_OPTIONS),
        )

    def __panel__(self):
        return pn.Column(self.more_traffic(), self.scheduler(), self.on_a_clock())


def fit_card(column: pn.Column) -> pn.Column:
    """Return `column` with its widgets as wide as the card that holds them.

    A fixed 300 px slider ran off the page at 1280 px where its card ended the row (the sentences-true issue, item 9).
    """
    for widget in column.objects:
        if isinstance(widget, pn.widgets.Widget):
            widget.sizing_mode = "stretch_width"
            widget.min_width = 0
    column.sizing_mode = "stretch_width"
    return column


def h2h_full(static: Run, continuous: Run, window: int, timed: tuple[TimedRun, TimedRun] | None) -> dict:
    """Return the full head-to-head of two runs as the page draws it: its rows' cells (formatted here, once) and bars.

    On steps: the window's nine rows and the lost-time note; on a clock every figure in ms, over each mode's drain.
    The bars: three groups, each pair scaled in the browser to its larger value, labelled with the real numbers.
    """
    ms, mc = compute_metrics(static, window), compute_metrics(continuous, window)
    if timed is not None:
        ts, tc = timed_metrics(timed[0]), timed_metrics(timed[1])
        rows, note, groups = h2h_timed_rows(ts, tc, ms.requests), "", H2H_TIMED_GROUPS
        values = [[m.tokens_per_s, m.ttft_ms["p50"], m.e2e_ms["mean"]] for m in (ts, tc)]
        decimals = (0, 1, 1)
    else:
        rows = h2h_rows(ms, mc, losses(static, window), losses(continuous, window), (static.policy, continuous.policy))
        note, groups, decimals = LOSS_NOTE + averages_note(static, continuous, window), H2H_GROUPS, (0, 0, 1)
        values = [[m.completed, 100 * m.utilisation, m.avg_latency_all or 0.0] for m in (ms, mc)]
    pair = (static.policy, continuous.policy)
    return {
        "pair": list(pair),
        "labels": [get_policy(p).label for p in pair],
        "caption": "Same traffic and same slots, over the window shown",
        "rows": [list(row) for row in rows],
        "note": note,
        "bars": [
            {
                "group": group,
                "values": [float(values[k][g]) for k in range(2)],
                "texts": [f"{pair[k]}: {values[k][g]:,.{decimals[g]}f}" for k in range(2)],
            }
            for g, group in enumerate(groups)
        ],
    }
