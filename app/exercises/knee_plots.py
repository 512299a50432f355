"""Exercise 1's figures: inter-token latency against its target, throughput and p99 latency, the knees marked."""

from __future__ import annotations

from dataclasses import dataclass

from bokeh.models import ColumnDataSource, FixedTicker, Label, Legend, LegendItem, NumeralTickFormatter, Span

from core.sweep import DEFAULT_BATCHES, SweepPoint

from .. import palette
from .common import small_figure

TARGET_COLOR = "#D55E00"
DECODE_COLOR = "#555555"
MEASURED_COLOR = "#56B4E9"
KNEE_COLOR = "#000000"
# The ITL figure's headroom: the highest point sits at 1/1.3 of the height and the target at most at 1/1.4, so the
# knees' labels, hung from the top, are never crossed by a line.
DATA_HEADROOM, TARGET_HEADROOM = 1.3, 1.4


def points_data(points: tuple[SweepPoint, ...]) -> dict[str, list]:
    """Return the plotted columns: batch, full decode step, ITL p99 (decode alone and on the clock), tokens/s, p99 s."""
    return {
        "batch": [p.batch for p in points],
        "step_ms": [p.step_ms for p in points],
        "decode_itl_p99_ms": [p.decode_itl_p99_ms for p in points],
        "itl_p99_ms": [p.itl_p99_ms for p in points],
        "tokens_per_s": [p.tokens_per_s for p in points],
        "p99_latency_s": [p.p99_latency_ms / 1e3 for p in points],
        "p99_admitted_s": [p.p99_admitted_ms / 1e3 for p in points],
    }


@dataclass
class KneePlots:
    """The knee view's three figures and the marks that move: target, the clock's ITL line, both knees' marks."""

    itl: object
    throughput: object
    latency: object
    target_line: Span
    target_label: Label
    itl_renderers: list  # the clock's ITL p99 line and dots: hidden until the learner has guessed
    legend_items: dict  # "clock": hidden with its line; "measured" (served page only): shown once a replay ran
    knee_spans: list[Span]  # the knee on the clock, one per figure
    knee_label: Label
    decode_span: Span  # where decode alone would put the knee (ITL figure only)
    decode_label: Label


def _batch_axis(fig) -> None:
    """Tick every swept batch size with a plain number (the log axis's own 10^n superscripts were clipped)."""
    fig.xaxis.ticker = FixedTicker(ticks=list(DEFAULT_BATCHES))
    fig.xaxis.formatter = NumeralTickFormatter(format="0")


def _itl_figure(source: ColumnDataSource, measured: ColumnDataSource | None):
    """Return the ITL figure, its legend below the plot (where it covers nothing), and the clock's renderers."""
    itl = small_figure("knee-itl", "Inter-token latency, p99", "ms", "batch size (slots)", log_x=True, height=330)
    decode = itl.line("batch", "decode_itl_p99_ms", source=source, color=DECODE_COLOR, line_dash="dashed", line_width=2)
    clock = itl.line("batch", "itl_p99_ms", source=source, color=palette.CONTINUOUS_COLOR, line_width=3)
    dots = itl.scatter("batch", "itl_p99_ms", source=source, color=palette.CONTINUOUS_COLOR, size=7)
    items = {
        "decode": LegendItem(label="decode alone (no prefill work)", renderers=[decode]),
        "clock": LegendItem(label="on the clock (prefill included)", renderers=[clock, dots]),
    }
    if measured is not None:
        diamonds = itl.scatter(
            "batch", "step_ms", source=measured, color=MEASURED_COLOR, size=9, marker="diamond", line_color="#000000"
        )
        items["measured"] = LegendItem(label="measured by the replay", renderers=[diamonds])
    legend = Legend(items=list(items.values()), location="top_left", border_line_alpha=0, padding=2, spacing=0)
    itl.add_layout(legend, "below")
    return itl, [clock, dots], items


def knee_plots(source: ColumnDataSource, measured: ColumnDataSource | None) -> KneePlots:
    """Return the ITL, throughput and p99 latency figures over `source` (see points_data), log batch axis.

    `measured`: the replay's step times, drawn as diamonds (None on the static page, which has no replay).
    """
    itl, itl_renderers, legend_items = _itl_figure(source, measured)
    target_line = Span(location=0, dimension="width", line_color=TARGET_COLOR, line_width=2)
    target_label = Label(x=1, y=0, text="", text_font_size="11px", text_color=TARGET_COLOR, x_offset=4, y_offset=3)
    throughput = small_figure("knee-throughput", "Throughput", "tokens/s", "batch size (slots)", log_x=True)
    throughput.line("batch", "tokens_per_s", source=source, color="#0072B2", line_width=3)
    throughput.scatter("batch", "tokens_per_s", source=source, color="#0072B2", size=7)
    latency = small_figure("knee-latency", "p99 latency (log scale)", "s", "batch size (slots)", log_x=True, log_y=True)
    latency.line("batch", "p99_latency_s", source=source, color="#CC79A7", line_width=3, legend_label="end to end")
    latency.scatter("batch", "p99_latency_s", source=source, color="#CC79A7", size=7)
    # Once admitted: past the knee each request's own time grows with the batch (the chapter's "every request in
    # the batch feels it"), while the end-to-end figure, below capacity, only stops falling.
    latency.line("batch", "p99_admitted_s", source=source, color="#555555", line_width=2, line_dash="dashed",
                 legend_label="once admitted (no wait for a slot)")  # fmt: skip
    latency.scatter("batch", "p99_admitted_s", source=source, color="#555555", size=5)
    latency.legend.location = "top_right"
    latency.legend.label_text_font_size = "10px"
    latency.yaxis.formatter = NumeralTickFormatter(format="0,0.[0]")
    knee_line = dict(location=1, dimension="height", line_dash="dotted", line_width=2)
    spans = [Span(line_color=KNEE_COLOR, **knee_line) for _ in range(3)]
    for fig, span in zip((itl, throughput, latency), spans):
        _batch_axis(fig)
        fig.add_layout(span)
    decode_span = Span(line_color=DECODE_COLOR, **knee_line)
    # The knees' labels hang from the top of the plot, beside their lines: the target line never crosses them.
    top = dict(text_font_size="11px", text_baseline="top", y=1)
    knee_label = Label(x=1, text="", text_font_style="bold", y_offset=-4, **top)
    decode_label = Label(x=1, text="", text_color=DECODE_COLOR, y_offset=-20, **top)
    for mark in (target_line, target_label, decode_span, knee_label, decode_label):
        itl.add_layout(mark)
    return KneePlots(
        itl,
        throughput,
        latency,
        target_line,
        target_label,
        itl_renderers,
        legend_items,
        spans,
        knee_label,
        decode_span,
        decode_label,
    )


def _hang(label: Label, batch: int | None, text: str, top: float) -> None:
    """Put a knee's label at the top of the plot, left of its line (right of it at the smallest batch)."""
    left = batch is not None and batch > DEFAULT_BATCHES[0]
    label.x, label.y, label.text = batch or DEFAULT_BATCHES[0], top, text
    label.text_align, label.x_offset = ("right", -4) if left else ("left", 4)


def show_knee(
    plots: KneePlots,
    data: dict,
    best: int | None,
    decode_best: int | None,
    target_ms: float,
    revealed: bool,
    measured_ms=(),
) -> None:
    """Move the marks and the axes to a sweep; before the guess, hide the clock's line and the knees.

    Mirrored in assets/export_exercises.js.
    """
    plots.target_line.location = target_ms
    plots.target_label.x, plots.target_label.y = DEFAULT_BATCHES[0], target_ms
    plots.target_label.text = f"target: {target_ms:g} ms per token"
    shown = [*data["decode_itl_p99_ms"], *(data["itl_p99_ms"] if revealed else [])]
    top = max(max([*shown, *measured_ms]) * DATA_HEADROOM, target_ms * TARGET_HEADROOM)
    plots.itl.y_range.end = top
    plots.throughput.y_range.end = max(data["tokens_per_s"]) * 1.1 or 1
    positive = [v for v in [*data["p99_latency_s"], *data["p99_admitted_s"]] if v > 0] or [1.0]
    plots.latency.y_range.start, plots.latency.y_range.end = min(positive) / 2, max(positive) * 2
    for renderer in plots.itl_renderers:
        renderer.visible = revealed
    plots.legend_items["clock"].visible = revealed
    if "measured" in plots.legend_items:
        plots.legend_items["measured"].visible = len(measured_ms) > 0
    for span in plots.knee_spans:
        span.location = best if best else None
        span.visible = revealed and best is not None
    plots.decode_span.location = decode_best if decode_best else None
    plots.decode_span.visible = revealed and decode_best is not None
    _hang(plots.knee_label, best, f"knee: batch {best}" if best else "no batch meets the target", top)
    _hang(plots.decode_label, decode_best, f"decode alone: {decode_best}" if decode_best else "", top)
    plots.knee_label.visible = plots.decode_label.visible = revealed
