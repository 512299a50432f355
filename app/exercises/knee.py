"""Exercise 1, find the knee: throughput and latency against batch size under the core's step-time cost model."""

from __future__ import annotations

import html
from dataclasses import dataclass, replace
from functools import lru_cache

import panel as pn
import param
from bokeh.models import ColumnDataSource, Label, Span

from core.cost import ROOFLINE_FIELDS
from core.hardware import (
    ACCELERATOR_OPTIONS,
    ACCELERATORS,
    DEFAULT_ACCELERATOR,
    DEFAULT_MODEL_SHAPE,
    MODEL_OPTIONS,
    MODEL_SHAPES,
    cost_model,
)
from core.sweep import DEFAULT_BATCHES, DEFAULT_RATE_PER_S, CostModel, SweepPoint, knee, sweep

from .. import palette
from ..loop import on_document
from .common import LazyViewer, query_number, small_figure, text_pane

RATE_RANGE = (1.0, 1000.0)
TARGET_RANGE = (1.0, 500.0)
FIELDS = {  # CostModel field -> (label, low, high)
    "params_b": ("Weights, billions of parameters", 0.01, 2000.0),
    "bytes_per_param": ("Bytes per parameter", 0.25, 8.0),
    "kv_bytes_per_token": ("KV-cache bytes per token", 0.0, 1e8),
    "mem_bw_gbs": ("Memory bandwidth, GB/s", 1.0, 1e5),
    "tflops": ("Peak dense compute, TFLOP/s", 0.01, 1e5),
    "overhead_ms": ("Per-step overhead, ms", 0.0, 100.0),
}
EXPLAIN = (
    "<p>Below the knee a step is memory-bound: it reads every weight once whatever the batch, so each extra row is "
    "nearly free and throughput climbs. Past it the batch's KV cache and compute dominate: each step slows, every "
    "request in the batch feels it as inter-token latency, and throughput flattens. The knee is the largest batch "
    "whose p99 inter-token latency, as the tokens felt it under this load, still meets the target. A light load "
    "never fills a big batch, so raising the rate pulls the knee down and a looser target pushes it up.</p>"
)


@lru_cache(maxsize=64)
def cached_sweep(rate_per_s: float, model: CostModel, target_ms: float) -> tuple[SweepPoint, ...]:
    """Return the sweep's points; shared by every session on the same settings."""
    return tuple(sweep(rate_per_s, DEFAULT_BATCHES, model, itl_target_ms=target_ms))


def points_data(points: tuple[SweepPoint, ...]) -> dict[str, list]:
    """Return the plotted columns: batch, full-step and felt ITL, tokens/s and p99 latency in seconds."""
    return {
        "batch": [p.batch for p in points],
        "step_ms": [p.step_ms for p in points],
        "itl_p99_ms": [p.itl_p99_ms for p in points],
        "tokens_per_s": [p.tokens_per_s for p in points],
        "p99_latency_s": [p.p99_latency_ms / 1e3 for p in points],
    }


@dataclass
class KneePlots:
    """The knee view's three figures and the marks that move: the target line, the knee lines and its label."""

    itl: object
    throughput: object
    latency: object
    target_line: Span
    knee_spans: list[Span]
    knee_label: Label


def knee_plots(source: ColumnDataSource, measured: ColumnDataSource | None) -> KneePlots:
    """Return the ITL, throughput and p99 latency figures over `source` (see points_data), log batch axis.

    `measured`: the replay's step times, drawn as diamonds (None on the static page, which has no replay).
    """
    itl = small_figure("knee-itl", "Inter-token latency", "ms", "batch size (slots)", log_x=True)
    itl.line(
        "batch",
        "step_ms",
        source=source,
        color="#888888",
        line_dash="dashed",
        line_width=2,
        legend_label="a full batch's step",
    )
    itl.line(
        "batch",
        "itl_p99_ms",
        source=source,
        color=palette.CONTINUOUS_COLOR,
        line_width=3,
        legend_label="p99 as the tokens felt it",
    )
    itl.scatter("batch", "itl_p99_ms", source=source, color=palette.CONTINUOUS_COLOR, size=7)
    if measured is not None:
        itl.scatter(
            "batch",
            "step_ms",
            source=measured,
            color=palette.STATIC_COLOR,
            size=8,
            marker="diamond",
            legend_label="measured by the replay (run it on the Simulator tab)",
        )
    itl.legend.location = "top_left"
    target_line = Span(location=0, dimension="width", line_color="#D55E00", line_width=2)
    itl.add_layout(target_line)
    throughput = small_figure("knee-throughput", "Throughput", "tokens/s", "batch size (slots)", log_x=True)
    throughput.line("batch", "tokens_per_s", source=source, color="#0072B2", line_width=3)
    throughput.scatter("batch", "tokens_per_s", source=source, color="#0072B2", size=7)
    latency = small_figure(
        "knee-latency", "p99 end-to-end latency (log scale)", "s", "batch size (slots)", log_x=True, log_y=True
    )
    latency.line("batch", "p99_latency_s", source=source, color="#CC79A7", line_width=3)
    latency.scatter("batch", "p99_latency_s", source=source, color="#CC79A7", size=7)
    spans = [
        Span(location=1, dimension="height", line_color="#000000", line_dash="dotted", line_width=2) for _ in range(3)
    ]
    for fig, span in zip((itl, throughput, latency), spans):
        fig.add_layout(span)
    label = Label(x=1, y=0, text="", text_font_size="11px", x_offset=4, y_offset=4)
    itl.add_layout(label)
    return KneePlots(itl, throughput, latency, target_line, spans, label)


def show_knee(plots: KneePlots, data: dict, best: int | None, target_ms: float, measured_ms=()) -> None:
    """Move the target line, the knee marks and the axes to a new sweep (mirrored in assets/export_exercises.js)."""
    plots.target_line.location = target_ms
    plots.itl.y_range.end = max([*data["step_ms"], target_ms, *measured_ms]) * 1.1
    plots.throughput.y_range.end = max(data["tokens_per_s"]) * 1.1 or 1
    positive = [v for v in data["p99_latency_s"] if v > 0] or [1.0]
    plots.latency.y_range.start, plots.latency.y_range.end = min(positive) / 2, max(positive) * 2
    for span in plots.knee_spans:
        span.location = best if best else None
        span.visible = best is not None
    plots.knee_label.x, plots.knee_label.y = (best or 1), target_ms
    plots.knee_label.text = f"knee: batch {best}" if best else "no batch meets the target"


class KneeView(LazyViewer):
    """Batch size 1-512 on a log axis: ITL against its target, throughput and p99 latency, and the knee marked."""

    rate_per_s = param.Number(default=DEFAULT_RATE_PER_S, bounds=RATE_RANGE, doc="Arrival rate, requests/s")
    itl_target_ms = param.Number(default=50.0, bounds=TARGET_RANGE, doc="Inter-token latency target, ms")
    accelerator = param.Selector(default=DEFAULT_ACCELERATOR, objects=list(ACCELERATORS))
    model_shape = param.Selector(default=DEFAULT_MODEL_SHAPE, objects=list(MODEL_SHAPES))
    model = param.ClassSelector(class_=CostModel, doc="The cost model: the presets' values, as edited")
    measured = param.Dict(default={}, doc="Replay's measured step ms by batch size, when it ran in this session")

    def __init__(self, **params):
        params.setdefault("model", cost_model())
        super().__init__(**params)

    def _build(self) -> None:
        self.source = ColumnDataSource(points_data(self.points()))
        points = sorted(self.measured.items())  # a replay may have run before this tab first opened
        self.measured_source = ColumnDataSource({"batch": [b for b, _ in points], "step_ms": [ms for _, ms in points]})
        self.readout = text_pane("")
        self._build_figures()
        self._build_widgets()
        self._refresh()
        self.param.watch(lambda *_e: on_document(self._refresh), ["rate_per_s", "itl_target_ms", "model"])
        self.param.watch(lambda *_e: on_document(self._show_measured), "measured")
        self.param.watch(self._apply_presets, ["accelerator", "model_shape"])

    def points(self) -> tuple[SweepPoint, ...]:
        """Return the sweep for the current rate, target and cost model."""
        return cached_sweep(self.rate_per_s, self.model, self.itl_target_ms)

    def apply_query(self, query: dict) -> list[str]:
        """Set the rate and target from `?rate=` and `?itl=`; return messages for what was refused."""
        messages = []
        for key, name, (low, high) in (("rate", "rate_per_s", RATE_RANGE), ("itl", "itl_target_ms", TARGET_RANGE)):
            value, message = query_number(query, key, low, high, getattr(self, name))
            if value is not None:
                setattr(self, name, value)
            messages += [message] if message else []
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
        # Recompute when the slider is released, not on every pixel of a drag (a sweep costs ~0.2 s).
        self.rate.param.watch(lambda e: setattr(self, "rate_per_s", e.new), "value_throttled")
        self.target.param.watch(lambda e: setattr(self, "itl_target_ms", e.new), "value_throttled")
        self.param.watch(lambda e: setattr(self.rate, "value", min(max(e.new, 1), 300)), "rate_per_s")
        self.param.watch(lambda e: setattr(self.target, "value", min(max(e.new, 5), 200)), "itl_target_ms")
        self.inputs = {}
        for f in ROOFLINE_FIELDS:
            label, low, high = FIELDS[f.name]
            widget = pn.widgets.FloatInput(
                label=label, value=getattr(self.model, f.name), start=low, end=high, width=200
            )
            widget.param.watch(lambda e, name=f.name: self._edit(name, e.new), "value")
            self.inputs[f.name] = widget

    def _edit(self, name: str, value) -> None:
        if value is None or getattr(self.model, name) == value:
            return
        low, high = FIELDS[name][1:]
        self.model = replace(self.model, **{name: min(max(float(value), low), high)})

    def _build_figures(self) -> None:
        self.plots = knee_plots(self.source, self.measured_source)

    def _refresh(self, *_events) -> None:
        points = self.points()
        data = points_data(points)
        self.source.data = data
        best = knee(list(points))
        show_knee(
            self.plots, data, best.batch if best else None, self.itl_target_ms, self.measured_source.data["step_ms"]
        )
        self.readout.object = self._readout(points, best)

    def _show_measured(self, *_events) -> None:
        points = sorted(self.measured.items())
        self.measured_source.data = {"batch": [b for b, _ in points], "step_ms": [ms for _, ms in points]}
        self._refresh()

    def _readout(self, points: tuple[SweepPoint, ...], best: SweepPoint | None) -> str:
        m = self.model
        rows = "".join(
            f'<tr data-batch="{p.batch}"><td>{p.batch}</td><td data-col="step_ms">{p.step_ms:.1f}</td>'
            f'<td data-col="itl_p99_ms">{p.itl_p99_ms:.1f}</td><td data-col="tokens_per_s">{p.tokens_per_s:.0f}</td>'
            f'<td data-col="p99_latency_s">{p.p99_latency_ms / 1e3:.2f}</td>'
            f"<td>{'yes' if p.meets_target else 'no'}</td></tr>"
            for p in points
        )
        verdict = (
            f'The knee: batch <b data-knee="{best.batch}">{best.batch}</b>, {best.itl_p99_ms:.1f} ms per token at '
            f"p99 and {best.tokens_per_s:,.0f} tokens/s."
            if best
            else f'<b data-knee="none">No batch size</b> meets {self.itl_target_ms:g} ms per token.'
        )
        return (
            f'<p class="bv-knee">{verdict} Workload: 2,000 heavy-tailed chat requests (mean 200 output tokens, '
            f"1,000-token prompts), Poisson at {self.rate_per_s:g} requests/s. Cost model: "
            f"{m.params_b:g}B parameters x {m.bytes_per_param:g} bytes, {m.kv_bytes_per_token:,.0f} KV bytes/token, "
            f"{m.mem_bw_gbs:g} GB/s, {m.tflops:g} TFLOP/s, {m.overhead_ms:g} ms per step.</p>"
            '<table class="bv-h2h bv-knee-table"><thead><tr><th>batch</th><th>full step ms</th><th>ITL p99 ms</th>'
            f"<th>tokens/s</th><th>p99 latency s</th><th>meets {html.escape(f'{self.itl_target_ms:g}')} ms</th>"
            f"</tr></thead><tbody>{rows}</tbody></table>"
        )

    def _compose(self):
        presets = pn.Row(
            pn.widgets.Select.from_param(self.param.accelerator, label="Accelerator", options=ACCELERATOR_OPTIONS),
            pn.widgets.Select.from_param(self.param.model_shape, label="Model", options=MODEL_OPTIONS),
        )
        return pn.Column(
            text_pane(
                "<h3>Exercise 1: find the knee</h3><p>Continuous batching at each batch size from 1 to 512, every "
                "step costed by the core's cost model: a step reads every weight and the batch's KV cache, or "
                "computes, whichever is slower, plus a fixed overhead.</p>"
            ),
            pn.Row(self.rate, self.target),
            presets,
            pn.FlexBox(*self.inputs.values()),
            pn.pane.Bokeh(self.plots.itl, sizing_mode="stretch_width"),
            pn.pane.Bokeh(self.plots.throughput, sizing_mode="stretch_width"),
            pn.pane.Bokeh(self.plots.latency, sizing_mode="stretch_width"),
            text_pane(EXPLAIN),
            self.readout,
            sizing_mode="stretch_width",
            css_classes=["bv-story"],
        )
