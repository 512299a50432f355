"""Exercise 1, find the knee: the learner guesses, then the knee on the timed simulator's clock is marked."""

from __future__ import annotations

import asyncio
import html
import math
from dataclasses import replace
from functools import lru_cache

import panel as pn
import param

from app.exercises.knee_plots import KneeCharts, knee_payload, points_data
from app.exercises.knee_words import (
    PAGE_RATE_PER_S,
    guess_html,
    keeps_up_html,
    kept_full,
    latency_html,
    load_html,
    motivation_html,
    moves_html,
    offered_tokens_per_s,
)
from app.page.stores import Measurements
from app.page.tabs import LazyViewer, Messages, query_number, text_pane
from app.server.loop import on_document
from app.server.server_log import follow_widget
from core.clock.cost import ROOFLINE_FIELDS, ROOFLINE_RANGES
from core.clock.hardware import (
    ACCELERATOR_OPTIONS,
    ACCELERATORS,
    DEFAULT_ACCELERATOR,
    DEFAULT_MODEL_SHAPE,
    MODEL_OPTIONS,
    MODEL_SHAPES,
    cost_model,
)
from core.measure.sweep import DEFAULT_BATCHES, CostModel, SweepPoint, decode_knee, knee, retarget, sweep

__all__ = ["EXPLAIN", "KneeCharts", "KneeView", "cached_sweep", "knee_payload", "points_data"]

RATE_RANGE = (1.0, 1000.0)
TARGET_RANGE = (1.0, 500.0)
LABELS = {
    "params_b": "Weights, billions of parameters",
    "bytes_per_param": "Bytes per parameter",
    "kv_bytes_per_token": "KV-cache bytes per token",
    "mem_bw_gbs": "Memory bandwidth, GB/s",
    "tflops": "Peak dense compute, TFLOP/s",
    "overhead_ms": "Per-step overhead, ms",
}
FIELDS = {name: (LABELS[name], *ROOFLINE_RANGES[name]) for name in LABELS}  # the CLI's ranges (core/clock/cost.py)
INTRO = (
    "<h3>Exercise 1: find the knee</h3><p>2,000 heavy-tailed chat requests (answers of 193.3 output tokens and "
    "prompts of 1,011 tokens on average, the prompts from 18 to 16,000 tokens; Poisson arrivals) under "
    "continuous batching at each batch size from 1 to 512, on the core's timed simulator: a pass reads every "
    "weight and the batch's KV cache, or computes, whichever is slower, plus a fixed overhead. A pass that admits "
    "a request also computes its whole prompt, and every token decoding beside it waits for that.</p>"
)
QUESTION = (
    "<b>Your guess first.</b> The dashed line is the p99 inter-token latency the tokens would feel if their passes "
    "only decoded. Which is the largest batch that still meets the target once the prompts are computed in the same "
    "passes?"
)
EXPLAIN = (
    "<p>A decode pass reads every weight once whatever the batch, so while the weights dominate the pass each extra "
    "row is nearly free and throughput climbs. Each row also adds its own KV cache to read and its own compute, so "
    "the pass grows with the batch; as far as the load fills the batch, every request in it feels that as "
    "inter-token latency. The knee is the largest batch whose p99 inter-token latency still meets the target, so it "
    "moves with the target (move the ITL target and watch it): it is not a fixed point where passes turn from "
    "memory-bound to compute-bound. A pass that prefills a new "
    "prompt is compute-bound and long, and the more slots there are, the more often some slot is admitting: the "
    "prefill stalls can pull the knee below where decode alone would put it (the readout above says whether they "
    "do here). Chunked prefill (the next chapter) splits each prompt over several passes so no pass stalls the "
    "decoders for long. A light load never fills a big "
    "batch: past the batch size the load fills, more slots change nothing, so those sizes are one run and the knee "
    "is named by the first of them. What a looser target or a higher rate "
    "does here is below the table, computed from the sweeps.</p>"
)


def served_document():
    """Return the session's Bokeh document where a server serves this view, else None (a notebook, an export)."""
    doc = pn.state.curdoc
    return doc if doc is not None and doc.session_context is not None else None


def other_rate(rate: float) -> float:
    """Return the rate the "what moves the knee" line compares with: twice this one, or half where that is too high."""
    return rate * 2 if rate * 2 <= RATE_RANGE[1] else rate / 2


def assumptions_html(rate_per_s: float, m: CostModel) -> str:
    """Return the table's last line: the arrivals and the cost model the sweep ran on."""
    return (
        f"<p>Poisson arrivals at {rate_per_s:g} requests/s. Cost model: {m.params_b:g}B parameters x "
        f"{m.bytes_per_param:g} bytes, {m.kv_bytes_per_token:,.0f} KV bytes/token, {m.mem_bw_gbs:g} GB/s, "
        f"{m.tflops:g} TFLOP/s, {m.overhead_ms:g} ms per pass.</p>"
    )


@lru_cache(maxsize=64)
def cached_sweep(rate_per_s: float, model: CostModel) -> tuple[SweepPoint, ...]:
    """Return the sweep's points (judged at 50 ms; see `retarget`); shared by every session on the same settings."""
    return tuple(sweep(rate_per_s, DEFAULT_BATCHES, model))


def verdict_html(
    best: SweepPoint | None,
    decode_best: SweepPoint | None,
    target_ms: float,
    guess: int | None,
    keeps_up: str = "",
    points: tuple[SweepPoint, ...] = (),
) -> str:
    """Return the readout: the question before the guess; after it, both knees with their numbers, and the guess."""
    if guess is None:
        return f'<p class="bv-knee" data-guess="ask">{QUESTION}</p>'
    t = f"{target_ms:g}"
    clock = (
        f'On the clock the knee is batch <b data-knee="{best.batch}">{best.batch}</b>: {best.itl_p99_ms:.1f} ms per '
        f"token at p99 and {best.tokens_per_s:,.0f} tokens/s."
        if best
        else f'On the clock <b data-knee="none">no batch size</b> meets {t} ms per token.'
    )
    if best and best.one_run:  # every larger size is this run: none of them is a knee of its own
        clock += (
            f' <span data-one-run="{best.batch}">From batch {best.batch} up every size is this same run (at most '
            f"{best.peak_rows} rows ever run at once, and nobody waits for a slot), so no larger size is a knee of its "
            "own.</span>"
        )
    if decode_best is None:
        decode = 'Even decode alone, <b data-decode-knee="none">no batch size</b> would meet it.'
    else:
        unfilled = "; every larger size is this run" if decode_best.one_run else ""
        decode = (
            f'Decode alone would meet {t} ms up to batch <b data-decode-knee="{decode_best.batch}">'
            f"{decode_best.batch}</b> ({decode_best.decode_itl_p99_ms:.1f} ms at p99{unfilled})"
        )
        moved = best is None or best.batch < decode_best.batch
        decode += (
            f": the prefill passes stall the tokens decoding beside them and bring the knee down to "
            f"{best.batch if best else 'nothing'}."
            if moved
            else ": at this load the prefill stalls do not move the knee."
        )
    return f'<p class="bv-knee">{clock}{keeps_up} {decode} {guess_html(guess, best, points)}</p>'


def table_html(points: tuple[SweepPoint, ...], target_ms: float) -> str:
    """Return the sweep's numbers, one row per batch size (shown once the learner has guessed)."""
    rows = "".join(
        f'<tr data-batch="{p.batch}"><td>{p.batch}</td><td data-col="step_ms">{p.step_ms:.1f}</td>'
        f'<td data-col="decode_itl_p99_ms">{p.decode_itl_p99_ms:.1f}</td>'
        f'<td data-col="itl_p99_ms">{p.itl_p99_ms:.1f}</td><td data-col="tokens_per_s">{p.tokens_per_s:.0f}</td>'
        f'<td data-col="p99_latency_s">{p.p99_latency_ms / 1e3:.2f}</td>'
        f'<td data-col="p99_admitted_s">{p.p99_admitted_ms / 1e3:.2f}</td>'
        f"<td>{'yes' if p.meets_target else 'no'}</td></tr>"
        for p in points
    )
    return (  # its own frame scrolls sideways on a phone, never the page
        '<div style="overflow-x: auto; max-width: 100%" tabindex="0" role="region" aria-label="The sweep, by batch">'
        '<table class="bv-h2h bv-knee-table"><thead><tr><th>batch</th><th>full decode step ms</th>'
        "<th>ITL p99 ms, decode alone</th><th>ITL p99 ms, on the clock</th><th>tokens/s</th><th>p99 latency s</th>"
        f"<th>p99 once admitted s</th><th>meets {html.escape(f'{target_ms:g}')} ms</th></tr></thead>"
        f"<tbody>{rows}</tbody></table></div>"
    )


class KneeView(LazyViewer):
    """Batch size 1-512 on a log axis: ITL against its target, throughput and p99 latency; guess, then the knee."""

    rate_per_s = param.Number(default=PAGE_RATE_PER_S, bounds=RATE_RANGE, doc="Arrival rate, requests/s")
    itl_target_ms = param.Number(default=50.0, bounds=TARGET_RANGE, doc="Inter-token latency target, ms")
    accelerator = param.Selector(default=DEFAULT_ACCELERATOR, objects=list(ACCELERATORS))
    model_shape = param.Selector(default=DEFAULT_MODEL_SHAPE, objects=list(MODEL_SHAPES))
    model = param.ClassSelector(class_=CostModel, doc="The cost model: the presets' values, as edited")
    measurements = param.ClassSelector(class_=Measurements, doc="The replay's step times, when it ran in this session")
    guess = param.Selector(default=None, objects=[None, *DEFAULT_BATCHES], doc="The learner's knee, asked first")

    @property
    def measured(self) -> dict:
        """Return the replay's measured step ms by batch size (empty until a replay ran in this session)."""
        return self.measurements.step_ms_by_batch

    def __init__(self, **params):
        params.setdefault("model", cost_model())
        params.setdefault("measurements", Measurements())
        super().__init__(**params)

    def _build(self) -> None:
        self.verdict, self.table, self.load, self.moves = text_pane(""), text_pane(""), text_pane(""), text_pane("")
        self.motivation, self.status = text_pane(""), text_pane("")
        self.status.visible = False  # shown only while a sweep is computed: an empty pane would take a line
        self.charts = KneeCharts(sizing_mode="stretch_width")  # a replay may have run before this tab opened
        self._build_widgets()
        self._computing = self._stale = False
        self._recompute()
        self.param.watch(lambda *_e: on_document(self._refresh), ["itl_target_ms"])  # a target re-reads the sweep
        self.param.watch(self._recompute, ["rate_per_s", "model", "guess"])
        self.measurements.param.watch(lambda *_e: on_document(self._show_measured), "step_ms_by_batch")
        self.param.watch(self._apply_presets, ["accelerator", "model_shape"])

    def points(self) -> tuple[SweepPoint, ...]:
        """Return the sweep for the current rate and cost model, judged against the current target."""
        return tuple(retarget(list(cached_sweep(self.rate_per_s, self.model)), self.itl_target_ms))

    def apply_query(self, query: dict) -> list[str]:
        """Set the rate, target and guess from `?rate=`, `?itl=` and `?guess=`; return messages for what was refused."""
        messages = []
        for key, name, (low, high) in (("rate", "rate_per_s", RATE_RANGE), ("itl", "itl_target_ms", TARGET_RANGE)):
            value, message = query_number(query, key, low, high, getattr(self, name))
            if value is not None:
                setattr(self, name, value)
            messages += [message] if message else []
        value, message = query_number(query, "guess", DEFAULT_BATCHES[0], DEFAULT_BATCHES[-1], 0, integer=True)
        if value is not None and value in DEFAULT_BATCHES and not message:
            self.guess = int(value)
        elif "guess" in query:
            sizes = ", ".join(map(str, DEFAULT_BATCHES))
            messages.append(f"URL: guess is not a swept batch size (use one of {sizes}); the page asks for one.")
        return messages

    def _apply_presets(self, *_events) -> None:
        self.model = cost_model(self.accelerator, self.model_shape, self.model.overhead_ms)
        for name, widget in self.inputs.items():
            widget.value = getattr(self.model, name)

    def _build_widgets(self) -> None:
        self.rate = pn.widgets.FloatSlider(
            label="Arrival rate (requests/s)", start=1, end=300, step=1, value=self.rate_per_s, width=260
        )
        self.target = pn.widgets.FloatSlider(
            label="ITL target (ms)", start=5, end=200, step=1, value=self.itl_target_ms, width=260
        )
        # Recompute when the slider is released, not on every pixel of a drag (a new rate's sweep costs ~0.6 s).
        follow_widget(self.rate, "value_throttled", self, "rate_per_s")
        follow_widget(self.target, "value_throttled", self, "itl_target_ms")
        self.param.watch(lambda e: setattr(self.rate, "value", min(max(e.new, 1), 300)), "rate_per_s")
        self.param.watch(lambda e: setattr(self.target, "value", min(max(e.new, 5), 200)), "itl_target_ms")
        self.guesses = pn.widgets.RadioButtonGroup(
            options={str(b): b for b in DEFAULT_BATCHES},
            color="primary",
            variant="outline",
            css_classes=["bv-knee-guess"],
            # The sizes wrap onto a second line on a phone instead of widening the page.
            stylesheets=[".bk-btn-group { flex-wrap: wrap; row-gap: 4px; }"],
            sizing_mode="stretch_width",
        )
        self.guesses.value = self.guess  # after construction: the widget would otherwise pick the first size
        follow_widget(self.guesses, "value", self, "guess")
        self.param.watch(lambda e: setattr(self.guesses, "value", e.new), "guess")
        self.input_message = Messages()  # beside the boxes: a refused value is read where it was typed
        self.inputs = {}
        for f in ROOFLINE_FIELDS:
            label = FIELDS[f.name][0]
            # No start/end on the box: Bokeh's input would keep showing a value past them while sending none, and
            # the server could not say what it refused. `_edit` checks the range and answers.
            widget = pn.widgets.FloatInput(label=label, value=getattr(self.model, f.name), width=200)
            widget.param.watch(lambda e, name=f.name: self._edit(name, e.new), "value")
            self.inputs[f.name] = widget

    def _edit(self, name: str, value) -> None:
        """Take a typed value inside its range; refuse any other, naming the range, and restore the last good one."""
        current = getattr(self.model, name)
        if value == current:
            return
        label, low, high = FIELDS[name]
        number = math.nan if value is None else float(value)
        if not (math.isfinite(number) and low <= number <= high):
            shown = "an empty box" if value is None else f"{number:,g}"
            self.input_message.text = f"{label}: {shown} is not allowed (use {low:,g} to {high:,g}); kept {current:,g}."
            # On the next tick: inside its own change from the browser, the box would not be sent the old value.
            pn.state.execute(lambda: setattr(self.inputs[name], "value", current), schedule=True)
            return
        self.input_message.text = ""
        self.model = replace(self.model, **{name: number})

    def _refresh(self, *_events) -> None:
        if self._computing:  # the worker's refresh follows with the latest settings
            return
        self.status.object, self.status.visible = "", False
        points = self.points()
        best, decode_best = knee(list(points)), decode_knee(list(points))
        full = dict(kept_full(self.model))
        revealed = self.guess is not None
        self.charts.payload = knee_payload(points, self.itl_target_ms, revealed, self.measured)
        offered = offered_tokens_per_s(self.rate_per_s)
        keeps_up = "" if best is None else keeps_up_html(best.batch, offered, full, best.one_run)
        self.verdict.object = verdict_html(best, decode_best, self.itl_target_ms, self.guess, keeps_up, points)
        self.table.object = (table_html(points, self.itl_target_ms) if revealed else "") + self._assumptions()
        self.load.object = load_html(self.rate_per_s, self.model, points)
        self.motivation.object = motivation_html(self.model)
        # What moves the knee, once the learner has guessed: from this sweep and one at another rate (~0.6 s, cached).
        other = other_rate(self.rate_per_s)
        self.moves.object = (
            moves_html(points, self.itl_target_ms, self.rate_per_s, cached_sweep(other, self.model), other)
            + latency_html(points)
            if revealed
            else ""
        )

    def _show_measured(self, *_events) -> None:
        self._refresh()

    def _sweeps(self, rate: float, model: CostModel, revealed: bool) -> None:
        """Compute (into `cached_sweep`) the sweeps a refresh reads: this rate's, and once guessed the other's."""
        cached_sweep(rate, model)
        if revealed:
            cached_sweep(other_rate(rate), model)

    def _recompute(self, *_events) -> None:
        """Refresh for new settings; served, the sweeps (~0.6 s each) run in a worker thread, the latest only.

        A tab opened on a busy server shows its controls and a line saying what is computed, instead of nothing;
        other sessions are served meanwhile, and edits typed in a row cost one sweep, not one each.
        """
        doc = served_document()
        try:
            loop = asyncio.get_running_loop()
        except RuntimeError:
            loop = None
        if loop is None or doc is None:  # a notebook, a test, an export: at once
            self._refresh()
            return
        self._stale = True
        self.status.visible = True
        self.status.object = (
            f'<p class="bv-computing" data-computing="1">Computing the sweep at {self.rate_per_s:g} requests/s '
            "on this cost model: every batch size 1 to 512 on the timed simulator…</p>"
        )
        if not self._computing:
            self._computing = True
            self._task = loop.create_task(self._compute(doc))  # held: a task nobody holds may be collected

    async def _compute(self, doc) -> None:
        """Compute the latest settings' sweeps off the event loop, then refresh the views with the document held."""
        try:
            while self._stale:
                self._stale = False
                await asyncio.to_thread(self._sweeps, self.rate_per_s, self.model, self.guess is not None)
        finally:
            self._computing = False
        doc.add_next_tick_callback(self._refresh)

    def _assumptions(self) -> str:
        return assumptions_html(self.rate_per_s, self.model)

    def _compose(self):
        # FlexBoxes, not Rows: at 390 px (a phone) the controls wrap instead of widening the page.
        presets = pn.FlexBox(
            pn.widgets.Select.from_param(self.param.accelerator, label="Accelerator", options=ACCELERATOR_OPTIONS),
            pn.widgets.Select.from_param(self.param.model_shape, label="Model", options=MODEL_OPTIONS),
            sizing_mode="stretch_width",
        )
        return pn.Column(
            text_pane(INTRO),
            self.motivation,
            pn.FlexBox(self.rate, self.target, sizing_mode="stretch_width"),
            self.load,
            self.status,
            presets,
            pn.FlexBox(*self.inputs.values()),
            self.input_message,
            self.verdict,
            self.guesses,
            self.charts,
            text_pane(EXPLAIN),
            self.table,
            self.moves,
            sizing_mode="stretch_width",
            css_classes=["bv-story"],
        )
