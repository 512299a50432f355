"""Views on a SimState: controls, the slot timeline with playback, live stats and the head-to-head panel."""

from __future__ import annotations

import html

import panel as pn
import param
from bokeh.models import ColumnDataSource, Div

from core import Metrics
from core.hardware import ACCELERATOR_OPTIONS, MODEL_OPTIONS
from core.losses import Losses, losses
from core.timed import TimedMetrics, timed_metrics

from . import palette
from .loop import on_document
from .plots import (
    H2H_GROUPS,
    H2H_TIMED_GROUPS,
    head_to_head_data,
    head_to_head_figure,
    head_to_head_timed_data,
    link_hover,
    set_head_to_head_groups,
    timeline_figure,
    update_timeline,
    update_timeline_on_clock,
)
from .progress import clock_playback_texts, clock_times, playback_texts
from .state import SimState
from .story import clock_loop_texts, loop_texts
from .style import CSS

PLAYBACK_JS = """
const n = src.data.panel.length;
const t = Math.max(0, Math.min(cb_obj.value, n - 1));
const x = src.data.cursor_x[t];  // steps: t + 1 (step t's own column is drawn); on a clock: the frame's time in ms
for (const c of curtains) c.left = x;
for (const c of cursors) c.location = x;
panel.text = src.data.panel[t];
loop.text = src.data.loop[t];
"""


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


def h2h_rows(static: Metrics, continuous: Metrics, static_loss: Losses, continuous_loss: Losses) -> list[tuple]:
    """Return the head-to-head's rows (key, label, static cell, continuous cell), every figure from the core.

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
            "Avg latency of the completed only (steps)",
            completed_only(static, "static-avg_latency"),
            completed_only(continuous, "continuous-avg_latency"),
        ),
        ("padding", "Padding (slot-steps)", f"{static_loss.padding}", f"{continuous_loss.padding}"),
        (
            "idle_while_waiting",
            "Empty slots while requests waited (slot-steps)",
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


# The first screen's rows and their short labels; the full table, with the long labels, is further down.
COMPACT = {"completed": "Completed", "utilisation": "GPU utilisation", "avg_latency_all": "Avg latency, all (steps)"}
COMPACT_TIMED = {"drain_ms": "All done at (ms)", "tokens_per_s": "Tokens/s", "e2e_mean": "Avg latency, all (ms)"}


def _short(rows: list[tuple], labels: dict[str, str]) -> list[tuple]:
    return [(key, labels[key], s, c) for key, _label, s, c in rows if key in labels]


def _h2h_table(rows: list[tuple], caption: str = "Same traffic and same slots, over the window shown") -> str:
    def cell(key: str | None, policy: str, value: str) -> str:
        return f'<td data-h2h="{policy}-{key}">{value}</td>' if key else f"<td>{value}</td>"

    body = "".join(
        f'<tr><th scope="row">{label}</th>{cell(key, "static", s)}{cell(key, "continuous", c)}</tr>'
        for key, label, s, c in rows
    )
    return (
        f'<table class="bv-h2h"><caption>{caption}</caption>'
        '<thead><tr><td></td><th scope="col">static</th><th scope="col">continuous</th></tr></thead>'
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


class Controls(pn.viewable.Viewer):
    """The widget's controls: mode, slots and seed on the first screen; the rest behind disclosures."""

    state = param.ClassSelector(class_=SimState)

    def __init__(self, **params):
        super().__init__(**params)
        s = self.state
        self.mode = pn.widgets.RadioButtonGroup.from_param(s.param.mode, label="Batching mode")
        self.slots = _slider(s, "slots", "Batch slots", 16)
        self.seed = pn.widgets.IntSlider.from_param(s.param.seed, label="Traffic seed")
        self.slots.width = self.seed.width = 240  # mode, slots and seed on one line in an 800 px column
        self.generator = [
            self.seed,
            _slider(s, "requests", "Requests", 64),
            pn.widgets.Select.from_param(s.param.lengths, label="Output lengths"),
            pn.widgets.IntSlider.from_param(s.param.mean_tokens, label="Mean output length (tokens)"),
            pn.widgets.IntSlider.from_param(s.param.arrival_window, label="Arrival window (steps)", end=64),
        ]
        s.param.watch(self._show_generator, ["trace", "trace_name"])
        self._show_generator()

    def _show_generator(self, *_events) -> None:
        for widget in self.generator:  # a fixed trace (the worked example) has no seed, count or lengths to move
            widget.visible = self.state.generator_applies

    def primary(self) -> pn.FlexBox:
        """Return the three controls the chapter's Try-it uses: mode, slots, seed."""
        return pn.FlexBox(self.mode, self.slots, self.seed, gap="4px 16px", sizing_mode="stretch_width")

    def more_traffic(self) -> pn.Column:
        """Return the traffic's other settings and the second timeline's switch."""
        s = self.state
        return pn.Column(
            *self.generator[1:],
            pn.widgets.IntSlider.from_param(s.param.batch_timeout, label="Static batch timeout (steps)"),
            pn.widgets.Checkbox.from_param(s.param.both, label="Show both modes on one time axis"),
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
        return pn.Column(self.primary(), self.more_traffic(), self.on_a_clock())


class TimelineView(pn.viewable.Viewer):
    """The execution timeline of the mode shown, with its caption, legend, live stats and playback texts."""

    state = param.ClassSelector(class_=SimState)
    theme = param.Selector(default="light", objects=list(palette.THEMES))

    def __init__(self, **params):
        super().__init__(**params)
        s = self.state
        theme = palette.THEMES[self.theme]
        # Step t is the pass at the cursor: its own column is drawn, the curtain starts at t + 1.
        self.plot = timeline_figure(s.run, s.window, s.step + 1, name="timeline", theme=theme)
        # The other mode on the same traffic, on the same time axis, under the same playback cursor.
        self.other = timeline_figure(s.other_run, s.window, s.step + 1, name="timeline-other", theme=theme)
        self.other.figure.x_range = self.plot.figure.x_range
        link_hover(self.plot, self.other)
        self.other.figure.visible = s.both
        self.other_pane = pn.pane.Bokeh(self.other.figure, sizing_mode="stretch_width", css_classes=["bv-timeline"])
        s.param.watch(lambda e: on_document(lambda: setattr(self.other.figure, "visible", e.new)), "both")
        self.progress = ColumnDataSource(self._texts())
        self.panel = Div(name="playback", stylesheets=[CSS], sizing_mode="stretch_width")
        # The scheduling loop with the lines this step executed lit; it follows the cursor like the texts above.
        self.loop = Div(name="loop", stylesheets=[CSS], sizing_mode="stretch_width")
        self.caption = pn.pane.HTML(sizing_mode="stretch_width", css_classes=["bv-caption"], stylesheets=[CSS])
        self._show_step()
        self.caption.object = palette.CAPTIONS[s.mode]
        if s.clock == "ms":  # a deep link straight onto the clock
            self._refresh()
        s.param.watch(
            lambda *_e: on_document(self._refresh),
            ["static_run", "continuous_run", "mode", "window", "clock", "accelerator", "model_shape"],
        )

    def link_inspector(self, div: Div) -> None:
        """Make hovering a request in either timeline outline its tokens and blocks in `div` (the batch view)."""
        link_hover(self.plot, self.other, inspectors=(div,), outline=palette.THEMES[self.theme].text)

    def link_player(self, playback) -> None:
        """Make the player drive the curtain, cursor and texts in the browser, with no server round trip."""
        p = self.plot
        playback.link(
            PLAYBACK_JS,
            {
                "src": self.progress,
                "curtains": [p.curtain, self.other.curtain],
                "cursors": [p.cursor, self.other.cursor],
                "panel": self.panel,
                "loop": self.loop,
            },
        )

    def _texts(self) -> dict[str, list]:
        s = self.state
        if s.clock == "ms":  # playback moves a time cursor over both drains; every figure is in ms
            shown, end = self._timed_shown()
            times = clock_times(end, s.window)
            return {
                "panel": list(clock_playback_texts(shown, end, s.window)),
                "loop": list(clock_loop_texts(shown, times)),
                "cursor_x": times,
            }
        return {
            "panel": list(playback_texts(s.run, s.window)),
            "loop": list(loop_texts(s.run, s.window)),
            "cursor_x": list(range(1, s.window + 1)),
        }

    def _timed_shown(self):
        """Return the shown mode's timed run and the end of the shared time axis (the later drain)."""
        static, continuous = self.state.timed_runs()
        end = max(static.drain_ms, continuous.drain_ms)
        return (static if self.state.mode == "static" else continuous), end

    def _show_step(self) -> None:
        t = min(self.state.step, self.state.window - 1)
        data = self.progress.data
        self.panel.text = data["panel"][t]
        self.loop.text = data["loop"][t]
        x = data["cursor_x"][t]
        for plot in (self.plot, self.other):
            plot.curtain.left, plot.cursor.location = x, x

    def _refresh(self, *_events) -> None:
        s = self.state
        self.progress.data = self._texts()
        if s.clock == "ms":
            static, continuous = s.timed_runs()
            end = max(static.drain_ms, continuous.drain_ms)
            shown, other = (static, continuous) if s.mode == "static" else (continuous, static)
            update_timeline_on_clock(self.plot, shown, end)
            update_timeline_on_clock(self.other, other, end)
        else:
            update_timeline(self.plot, s.run, s.window, min(s.step, s.window - 1) + 1)
            update_timeline(self.other, s.other_run, s.window, min(s.step, s.window - 1) + 1)
        self._show_step()
        self.caption.object = palette.CAPTIONS[s.mode]

    def status(self) -> pn.pane.Bokeh:
        """Return the readout, live stats, waste meter and decision log at the cursor (one block, redrawn per frame)."""
        return pn.pane.Bokeh(self.panel, styles={"flex": "1 1 380px", "min-width": "0"})

    def figures(self) -> pn.Column:
        """Return both timelines on one axis, the legend, and the mode's caption."""
        return pn.Column(
            pn.pane.Bokeh(self.plot.figure, sizing_mode="stretch_width", css_classes=["bv-timeline"]),
            self.other_pane,
            pn.pane.HTML(palette.legend_html(), sizing_mode="stretch_width", stylesheets=[CSS]),
            self.caption,
            sizing_mode="stretch_width",
        )

    def __panel__(self):
        return pn.Column(self.status(), self.figures(), sizing_mode="stretch_width")


class HeadToHeadView(pn.viewable.Viewer):
    """Static and continuous on the traffic shown: completed, GPU utilisation and average latency, as paired bars."""

    state = param.ClassSelector(class_=SimState)
    theme = param.Selector(default="light", objects=list(palette.THEMES))

    def __init__(self, **params):
        super().__init__(**params)
        self.table = pn.pane.HTML(sizing_mode="stretch_width", stylesheets=[CSS])
        # The first screen's three rows (completed, utilisation, latency over every request); the full table below.
        self.compact = pn.pane.HTML(stylesheets=[CSS], styles={"flex": "0 0 auto"}, css_classes=["bv-h2h-compact"])
        result = self.state.comparison()
        self.bar_data = ColumnDataSource(head_to_head_data(result.static, result.continuous))
        self.bars = pn.pane.Bokeh(
            head_to_head_figure(self.bar_data, palette.THEMES[self.theme]), sizing_mode="stretch_width"
        )
        self._refresh()
        self.state.param.watch(
            lambda *_e: on_document(self._refresh),
            ["static_run", "continuous_run", "window", "clock", "accelerator", "model_shape"],
        )

    def _refresh(self, *_events) -> None:
        s = self.state
        result = s.comparison()
        loss = (losses(s.static_run, s.window), losses(s.continuous_run, s.window))
        if s.clock == "ms":  # on a clock every figure is in ms: the step rows would mix units
            static, continuous = (timed_metrics(run) for run in s.timed_runs())
            rows = h2h_timed_rows(static, continuous, result.static.requests)
            self.table.object = _h2h_table(rows)
            self.compact.object = _h2h_table(_short(rows, COMPACT_TIMED), "Head to head, same traffic")
            self.bar_data.data = head_to_head_timed_data(static, continuous)
            set_head_to_head_groups(self.bars.object, H2H_TIMED_GROUPS)
            return
        rows = h2h_rows(result.static, result.continuous, *loss)
        self.table.object = _h2h_table(rows)
        self.compact.object = _h2h_table(_short(rows, COMPACT), "Head to head, same traffic")
        set_head_to_head_groups(self.bars.object, H2H_GROUPS)
        self.bar_data.data = head_to_head_data(result.static, result.continuous)

    def __panel__(self):
        return pn.Column(pn.pane.Markdown("### Head to head"), self.table, self.bars, sizing_mode="stretch_width")


class Messages(pn.viewable.Viewer):
    """One visible place for input problems (URL values, uploaded files); the app keeps working."""

    text = param.String(default="")

    def __panel__(self):
        box = pn.pane.HTML(visible=False, sizing_mode="stretch_width", stylesheets=[CSS])

        def show(event=None):
            box.object = f'<div class="bv-message" role="alert">{html.escape(self.text)}</div>'
            box.visible = bool(self.text)

        self.param.watch(show, "text")
        show()
        return box
