"""The replay's figures: each policy's timeline on the wall clock (slots and requests named) and the step times."""

from __future__ import annotations

from bokeh.models import ColumnDataSource, FixedTicker, LabelSet, Range1d
from bokeh.plotting import figure

from app.page import palette
from app.simulator.plots import draw_states


def timed_wallclock_data(run) -> dict[str, dict[str, list]]:
    """Return an online replay's timeline (a TimedRun) in milliseconds: generating and padding per slot."""
    gen = {
        "left": run.start_ms.tolist(),
        "right": run.finish_ms.tolist(),
        "bottom": run.slot.tolist(),
        "top": (run.slot + 1).tolist(),
        "id": [r.id for r in run.requests],
    }
    padded = run.release_pass > run.finish_pass
    pad = {
        "left": run.finish_ms[padded].tolist(),
        "right": run.release_ms[padded].tolist(),
        "bottom": run.slot[padded].tolist(),
        "top": (run.slot[padded] + 1).tolist(),
    }
    return {"generating": gen, "padding": pad}


def wallclock_data(result) -> dict[str, dict[str, list]]:
    """Return a replay's timeline in milliseconds: generating and padding rectangles per slot."""
    run, clock = result.run, result.step_start_ms
    gen = {
        "left": clock[run.start].tolist(),
        "right": clock[run.finish].tolist(),
        "bottom": run.slot.tolist(),
        "top": (run.slot + 1).tolist(),
        "id": [r.id for r in run.requests],
    }
    padded = run.release > run.finish
    pad = {
        "left": clock[run.finish[padded]].tolist(),
        "right": clock[run.release[padded]].tolist(),
        "bottom": run.slot[padded].tolist(),
        "top": (run.slot[padded] + 1).tolist(),
    }
    return {"generating": gen, "padding": pad}


def wallclock_figure(result, x_range: Range1d, name: str):
    """Return the timeline of a replay on a wall-clock axis (ms); same colours and hatching as the step timeline."""
    online = hasattr(result.run, "pass_start_ms")
    data = timed_wallclock_data(result.run) if online else wallclock_data(result)
    slots = result.run.slots
    total_ms = result.run.drain_ms if online else result.total_s * 1e3
    fig = figure(
        name=name,
        title=f"{result.run.policy}: {total_ms:.0f} ms on {result.device}" + (", in real time" if online else ""),
        x_range=x_range,
        y_range=Range1d(slots, 0),
        height=None,
        frame_height=max(18 * slots, 60),
        sizing_mode="stretch_width",
        toolbar_location=None,
        tools="hover",
        tooltips=[("request", "@id")],
        x_axis_label="wall-clock time (ms)",
        background_fill_color=palette.IDLE_COLOR,
    )
    label_slots_and_requests(fig, data["generating"], slots)
    fig.grid.visible = False
    draw_states(fig, ColumnDataSource(data["generating"]), ColumnDataSource(data["padding"]))
    fig.add_layout(  # after the cells: each request's letter at its start, as on the step timeline
        LabelSet(x="left", y="mid", text="id", source=ColumnDataSource(data["generating"]), x_offset=2,
                 text_baseline="middle", text_font_size="10px", text_color=palette.LABEL_COLOR)  # fmt: skip
    )
    return fig


def label_slots_and_requests(fig, generating: dict[str, list], slots: int) -> None:
    """Name each row as the step timeline does (slot0, slot1, ...) and give each request's cell its row's middle."""
    centres = [s + 0.5 for s in range(slots)]
    fig.yaxis.ticker = FixedTicker(ticks=centres)
    fig.yaxis.major_label_overrides = {c: f"slot{s}" for s, c in enumerate(centres)}
    fig.yaxis.major_tick_line_color = fig.yaxis.minor_tick_line_color = None
    generating["mid"] = [b + 0.5 for b in generating["bottom"]]


def step_time_figure(doc: dict):
    """Return measured step time against batch size (rows computed) for both policies."""
    fig = figure(
        name="replay-step-time",
        height=220,
        sizing_mode="stretch_width",
        toolbar_location=None,
        tools="",
        x_axis_label="batch size (rows computed in the step)",
        y_axis_label="mean step time (ms)",
    )
    for policy, colour in (("static", palette.STATIC_COLOR), ("continuous", palette.CONTINUOUS_COLOR)):
        points = sorted(doc["step_ms_by_batch"][policy].items())
        xs, ys = [b for b, _ in points], [ms for _, ms in points]
        fig.line(xs, ys, color=colour, line_width=2, legend_label=policy)
        fig.scatter(xs, ys, color=colour, size=6)
    fig.legend.location = "top_left"
    return fig
