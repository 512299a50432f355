"""Pure Bokeh plot builders: a Run's slot-timeline figure (the notebook's), and the head-to-head's group names.

The page's own timelines are drawn in the browser by app/web/renderer.js.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from bokeh.models import (
    BoxAnnotation,
    ColumnDataSource,
    FixedTicker,
    GlyphRenderer,
    HoverTool,
    Quad,
    Range1d,
    Span,
    Text,
)
from bokeh.plotting import figure

from app.page import palette
from app.page.runs import MIN_LABEL_CELLS
from core import Run

ROW_PX = 30


def timeline_data(run: Run, window: int) -> dict[str, dict[str, list]]:
    """Return the timeline's glyph data: one rectangle per run of generating or padding, one idle row per slot."""
    shown = run.start < window
    idx = np.flatnonzero(shown)
    arrival = run.arrival
    gen = {
        "left": run.start[idx].tolist(),
        "right": np.minimum(run.finish[idx], window).tolist(),
        "bottom": run.slot[idx].tolist(),
        "top": (run.slot[idx] + 1).tolist(),
        "id": [run.requests[i].id for i in idx],
        "arrival": arrival[idx].tolist(),
        "start": run.start[idx].tolist(),
        "finish": run.finish[idx].tolist(),
        "latency": (run.finish - arrival)[idx].tolist(),
        "wait": (run.start - arrival)[idx].tolist(),
        "label_x": (run.start[idx] + 0.12).tolist(),
        "label_y": (run.slot[idx] + 0.06).tolist(),
        "label": [
            run.requests[i].id if min(run.finish[i], window) - run.start[i] >= MIN_LABEL_CELLS else "" for i in idx
        ],
    }
    padded = np.flatnonzero((run.release > run.finish) & (run.finish < window))
    pad = {
        "left": run.finish[padded].tolist(),
        "right": np.minimum(run.release[padded], window).tolist(),
        "bottom": run.slot[padded].tolist(),
        "top": (run.slot[padded] + 1).tolist(),
        "id": [run.requests[i].id for i in padded],
    }
    idle = {
        "left": [0] * run.slots,
        "right": [window] * run.slots,
        "bottom": list(range(run.slots)),
        "top": list(range(1, run.slots + 1)),
    }
    return {"generating": gen, "padding": pad, "idle": idle}


@dataclass
class TimelinePlot:
    """The timeline figure and the models playback and updates touch."""

    figure: object
    sources: dict[str, ColumnDataSource]
    curtain: BoxAnnotation
    cursor: Span
    hover: HoverTool


RECT = {"left": "left", "right": "right", "bottom": "bottom", "top": "top"}


def add_glyph(fig, source: ColumnDataSource, glyph, still: bool = False) -> GlyphRenderer:
    """Add one renderer of `glyph` over `source`; `still`: selection and non-selection draw it unchanged.

    Built directly rather than through `fig.quad`/`fig.text`, whose helpers build extra glyph models: a new session
    builds a dozen renderers, and this halves their cost.
    """
    renderer = GlyphRenderer(data_source=source, glyph=glyph)
    if still:
        renderer.selection_glyph = renderer.nonselection_glyph = glyph
    fig.renderers.append(renderer)
    return renderer


def draw_states(fig, generating: ColumnDataSource, padding: ColumnDataSource) -> GlyphRenderer:
    """Draw padding (hatched) and generating rectangles in the legend's style; return the generating renderer."""
    hatched = Quad(
        **RECT,
        fill_color=palette.PADDING_COLOR,
        line_color=None,
        hatch_pattern="/",
        hatch_color=palette.PADDING_HATCH,
        hatch_scale=10,
        hatch_weight=1,
    )
    add_glyph(fig, padding, hatched, still=True)
    solid = Quad(**RECT, fill_color=palette.GENERATING_COLOR, line_color="white", line_width=1)
    return add_glyph(fig, generating, solid, still=True)


def _style_axes(fig, slots: int, window: int) -> None:
    fig.y_range.start, fig.y_range.end = slots, 0  # slot0 on top
    fig.x_range.start, fig.x_range.end = 0, window
    # Edit the axis in place, and only when the slot count changed: a new ticker model costs the browser a re-layout.
    axis, ticks = fig.yaxis[0], [i + 0.5 for i in range(slots)]
    if not isinstance(axis.ticker, FixedTicker):
        axis.ticker = FixedTicker(ticks=ticks)
    elif list(axis.ticker.ticks) != ticks:
        axis.ticker.ticks = ticks
    overrides = {tick: f"slot{i}" for i, tick in enumerate(ticks)}
    if axis.major_label_overrides != overrides:
        axis.major_label_overrides = overrides
    fig.frame_height = max(ROW_PX * slots, 60) if slots <= 8 else 22 * slots
    size = label_size(slots)
    for renderer in fig.renderers:
        if isinstance(renderer.glyph, Text) and renderer.glyph.text_font_size != size:
            renderer.glyph.text_font_size = size


def label_size(slots: int) -> str:
    """Return the request labels' font size: as large as keeps them above the row's centre, where cells are read."""
    return "12px" if slots <= 8 else "9px"  # rows are 30 px up to 8 slots, then 22 px (10 px reached the centre)


def _apply_theme(fig, theme: palette.Theme) -> None:
    fig.background_fill_color = fig.border_fill_color = theme.background
    fig.title.text_color = theme.text
    for axis in (*fig.xaxis, *fig.yaxis):
        axis.axis_line_color = axis.major_tick_line_color = axis.minor_tick_line_color = theme.text
        axis.major_label_text_color = axis.axis_label_text_color = theme.text


def _bare_figure(name: str, window: int, slots: int):
    """Return an empty timeline figure: its ranges, borders and axis label, no grid, no outline, no tools."""
    fig = figure(
        name=name,
        x_range=Range1d(0, window),
        y_range=Range1d(slots, 0),
        height=None,
        sizing_mode="stretch_width",
        width=320,  # Bokeh's 600 px default would be the narrowest the timeline gets; a phone is 390
        frame_height=ROW_PX * 4,
        toolbar_location=None,
        tools="",
        x_axis_label="step (one forward pass)",
        min_border_left=56,
        min_border_right=16,
        min_border_top=8,
        min_border_bottom=8,
    )
    fig.xgrid.visible = fig.ygrid.visible = False
    fig.outline_line_color = None
    return fig


def timeline_figure(
    run: Run, window: int, step: int, name: str, theme: palette.Theme = palette.THEMES["light"]
) -> TimelinePlot:
    """Return a new timeline figure for `run` over `window` steps, revealed up to `step`."""
    data = timeline_data(run, window)
    sources = {key: ColumnDataSource(value) for key, value in data.items()}
    fig = _bare_figure(name, window, run.slots)
    add_glyph(fig, sources["idle"], Quad(**RECT, fill_color=palette.IDLE_COLOR, line_color=None))
    gen = draw_states(fig, sources["generating"], sources["padding"])
    # Selection marks the hovered request (see link_hover); nothing else may dim or change.
    gen.selection_glyph = gen.glyph.clone(line_color=palette.HIGHLIGHT_COLOR, line_width=3)
    label = Text(
        x="label_x",
        y="label_y",
        text="label",
        text_font_size=label_size(run.slots),
        text_baseline="top",
        text_color=palette.LABEL_COLOR,
    )
    add_glyph(fig, sources["generating"], label, still=True)
    hover = HoverTool(
        renderers=[gen],
        tooltips=[
            ("request", "@id"),
            ("arrival", "@arrival"),
            ("start", "@start"),
            ("finish", "@finish"),
            ("latency", "@latency steps"),
            ("wait", "@wait steps"),
        ],
    )
    fig.add_tools(hover)
    curtain = BoxAnnotation(
        left=step, right=window, fill_color=theme.background, fill_alpha=1.0, line_color=None, level="overlay"
    )
    cursor = Span(
        location=step, dimension="height", line_color=theme.text, line_width=2, line_dash="dashed", level="overlay"
    )
    fig.add_layout(curtain)
    fig.add_layout(cursor)
    _style_axes(fig, run.slots, window)
    fig.title.text = f"{run.policy} batching"
    _apply_theme(fig, theme)
    return TimelinePlot(fig, sources, curtain, cursor, hover)


H2H_GROUPS = ["completed", "GPU utilisation %", "avg latency, all (steps)"]


H2H_TIMED_GROUPS = ["tokens/s", "TTFT p50 (ms)", "avg latency, all (ms)"]
