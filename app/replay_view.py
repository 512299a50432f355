"""The "real replay" section: run both schedules through a real model off the event loop, and show what it measured."""

from __future__ import annotations

import html
import importlib.util
import threading
from dataclasses import dataclass, field

import panel as pn
import param
from bokeh.models import ColumnDataSource, Div, Range1d
from bokeh.plotting import figure

from core import LimitError, Request

from . import palette
from .loop import on_document
from .plots import draw_states
from .state import SimState
from .style import CSS

ENABLE_TEXT = (
    "The real replay needs PyTorch, which is not installed here. Enable it with "
    "<code>pip install torch==2.13.0</code> (the CPU build) and <code>pip install -e '.[replay]'</code>, "
    "then restart the server. The rest of the app works without it."
)
# One replay at a time per server: the model and the CPU (or GPU) are shared by every session.
_SERVER_LOCK = threading.Lock()


def torch_available() -> bool:
    """Return whether torch can be imported (without importing it)."""
    return importlib.util.find_spec("torch") is not None


@dataclass
class ReplayJob:
    """A replay of both policies on one traffic, run in a worker thread; poll `progress`, `done`, `result`."""

    requests: list[Request]
    slots: int
    model: str = "tiny"
    device: str | None = None
    progress: float = 0.0
    done: bool = False
    error: str = ""
    result: dict | None = None
    cancel: threading.Event = field(default_factory=threading.Event)

    def start(self) -> str:
        """Start the worker; return '' or, when another replay holds this server, the message saying so."""
        if not _SERVER_LOCK.acquire(blocking=False):
            self.done = True
            self.error = "A replay is already running on this server; try again when it finishes."
            return self.error
        threading.Thread(target=self._run, name="batchviz-replay", daemon=True).start()
        return ""

    def _run(self) -> None:
        try:
            from replay import Engine

            engine = Engine(self.model, self.device)
            runs = {}
            for k, policy in enumerate(("static", "continuous")):

                def step(t, drain, k=k):
                    self.progress = (k + (t + 1) / drain) / 2

                runs[policy] = engine.replay(self.requests, self.slots, policy, on_step=step, cancel=self.cancel)
                if runs[policy].cancelled:
                    self.error = "Replay cancelled."
                    return
            self.result = runs
        except LimitError as exc:  # refused before anything was allocated
            self.error = f"Replay refused: {exc}"
        except Exception as exc:  # shown in the view; the server and other sessions carry on
            self.error = f"Replay failed: {exc}"
        finally:
            _SERVER_LOCK.release()  # before `done`, so whoever sees the job done may start the next one
            self.done = True


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
    data = wallclock_data(result)
    slots = result.run.slots
    fig = figure(
        name=name,
        title=f"{result.run.policy}: {result.total_s * 1e3:.0f} ms on {result.device}",
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
    fig.yaxis.visible = False
    fig.grid.visible = False
    draw_states(fig, ColumnDataSource(data["generating"]), ColumnDataSource(data["padding"]))
    return fig


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


class PresetSelect(pn.widgets.Select):
    """A Select that refuses a value outside its options (a stale or hostile browser can send one) with a message."""

    refused = param.String(default="", doc="Why the browser's last value was refused ('' when it was taken)")
    _rename = {**pn.widgets.Select._rename, "refused": None}  # server-side only, not a Bokeh property

    def _process_property_change(self, props: dict) -> dict:
        if "value" in props and props["value"] not in self.labels:
            self.refused = ""  # so the same refusal twice is two events
            self.refused = (
                f"Model preset {str(props['value'])[:40]!r} is not offered here; choose {' or '.join(self.labels)}."
            )
            props = {k: v for k, v in props.items() if k != "value"}
        return super()._process_property_change(props)


def session_closed(doc) -> bool:
    """Return whether no browser is connected to this document's session any more (its websocket closed)."""
    session = getattr(getattr(doc, "session_context", None), "_session", None)
    return session is not None and session.connection_count == 0


class ReplayView(pn.viewable.Viewer):
    """Run the traffic shown through a real model: progress, cancel, wall-clock timelines, measured vs simulated."""

    state = param.ClassSelector(class_=SimState)
    measured = param.Dict(default={}, doc="The last replay's continuous step time (ms) by batch size")

    def __init__(self, **params):
        super().__init__(**params)
        self.available = torch_available()
        self.job: ReplayJob | None = None
        self.model = PresetSelect(label="Model preset", options=["tiny", "small"], value="tiny", width=140)
        self.model.param.watch(lambda e: e.new and self._say(e.new), "refused")
        self.run_button = pn.widgets.Button(label="Run replay", color="primary", width=120)
        self.cancel_button = pn.widgets.Button(label="Cancel", width=90, disabled=True)
        self.progress = pn.indicators.Progress(value=0, max=100, width=260, visible=False)
        self.status = Div(text="", name="replay-status", stylesheets=[CSS])
        self.results = pn.Column(sizing_mode="stretch_width")
        self.run_button.on_click(self._start)
        self.cancel_button.on_click(lambda _e: self.job and self.job.cancel.set())
        self._poll = None

    def _start(self, _event=None) -> None:
        s = self.state
        self.job = ReplayJob(list(s.traffic()), s.slots, self.model.value)
        refused = self.job.start()
        if refused:
            self._say(refused)
            return
        self.run_button.disabled, self.cancel_button.disabled = True, False
        self.progress.visible, self.progress.value = True, 0
        self._status(f"Replaying {len(self.job.requests)} requests on {s.slots} slots…")
        # The worker never touches the page; this callback, on the event loop, reads its progress.
        self._doc = pn.state.curdoc
        self._poll = pn.state.add_periodic_callback(self._check, period=100)
        if pn.state.curdoc and pn.state.curdoc.session_context:
            job = self.job
            pn.state.on_session_destroyed(lambda _ctx: job.cancel.set())

    def _say(self, message: str) -> None:
        self._status(f'<span class="bv-message" role="alert">{html.escape(message)}</span>')

    def _status(self, text: str) -> None:
        on_document(lambda: setattr(self.status, "text", text))

    def _check(self) -> None:
        job = self.job
        if session_closed(self._doc):
            # A closed tab must not hold the server's one replay slot until its session expires (15 s or more).
            job.cancel.set()
        self.progress.value = int(100 * job.progress)
        if not job.done:
            return
        self._poll.stop()
        self.run_button.disabled, self.cancel_button.disabled = False, True
        self.progress.visible = False
        if job.error:
            self._say(job.error)
            return
        self._status("")
        self.results.objects = self._render(job.result)

    def _render(self, runs: dict) -> list:
        from replay.report import summary

        static, continuous = runs["static"], runs["continuous"]
        doc = summary(static, continuous)
        self.measured = dict(doc["step_ms_by_batch"]["continuous"])
        text = (
            f'<div class="bv-replay">Model <b>{doc["model"]}</b> on <b data-replay="device">{doc["device"]}</b>. '
            f'Measured speedup <b data-replay="measured">{doc["measured_speedup"] or 0:.2f}×</b> '
            f"(tokens/s: {doc['static']['tokens_per_s']:.0f} static, {doc['continuous']['tokens_per_s']:.0f} "
            f'continuous); the simulator predicts <b data-replay="predicted">{doc["predicted_speedup"]:.2f}×</b>. '
            f'Rows computed: <b data-replay="static-rows">{doc["static"]["rows_computed"]}</b> static '
            f'(padding included) vs <b data-replay="continuous-rows">{doc["continuous"]["rows_computed"]}</b> '
            "continuous.</div>"
        )
        x_range = Range1d(0, max(static.total_s, continuous.total_s) * 1e3)
        return [
            pn.pane.HTML(text, sizing_mode="stretch_width", stylesheets=[CSS]),
            pn.pane.Bokeh(wallclock_figure(static, x_range, "replay-static"), sizing_mode="stretch_width"),
            pn.pane.Bokeh(wallclock_figure(continuous, x_range, "replay-continuous"), sizing_mode="stretch_width"),
            pn.pane.Bokeh(step_time_figure(doc), sizing_mode="stretch_width"),
        ]

    def __panel__(self):
        if not self.available:
            return pn.Column(
                pn.pane.Markdown("### Real replay"),
                pn.pane.HTML(f'<div class="bv-replay-off">{ENABLE_TEXT}</div>', stylesheets=[CSS]),
                sizing_mode="stretch_width",
            )
        return pn.Column(
            pn.pane.Markdown("### Real replay: the same schedules through a real model"),
            pn.pane.Markdown(
                "Runs the traffic shown, static then continuous, through a randomly initialised transformer "
                "on this server's GPU if it has one, else its CPU, and measures every step in wall-clock time."
            ),
            pn.Row(self.model, self.run_button, self.cancel_button, self.progress),
            pn.pane.Bokeh(self.status),
            self.results,
            sizing_mode="stretch_width",
        )
