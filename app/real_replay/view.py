"""The "real replay" section: run both schedules through a real model off the event loop, and show what it measured."""

from __future__ import annotations

import html
import importlib.util
import threading
from dataclasses import dataclass, field, replace

import panel as pn
import param
from bokeh.models import Div, Range1d

from app.page.stores import Measurements
from app.real_replay.figures import step_time_figure, wallclock_figure
from app.server.loop import on_document
from app.simulator.state import SimState
from app.web.style import CSS
from core import LimitError, Request
from replay import Cancelled  # torch-free: replay's package imports torch only when an engine is asked for

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
    online: bool = False
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
            if self.online:
                self.result = self._run_online(engine)
                return
            runs = {}
            for k, policy in enumerate(("static", "continuous")):

                def step(t, drain, k=k):
                    self.progress = (k + (t + 1) / drain) / 2

                runs[policy] = engine.replay(self.requests, self.slots, policy, on_step=step, cancel=self.cancel)
                if runs[policy].cancelled:
                    self.error = "Replay cancelled."
                    return
            self.result = runs
        except Cancelled:
            self.error = "Replay cancelled."
        except LimitError as exc:  # refused before anything was allocated
            self.error = f"Replay refused: {exc}"
        except Exception as exc:  # shown in the view; the server and other sessions carry on
            self.error = f"Replay failed: {exc}"
        finally:
            _SERVER_LOCK.release()  # before `done`, so whoever sees the job done may start the next one
            self.done = True

    def _run_online(self, engine) -> dict:
        """Profile the model (once per server), then replay both policies in real time beside the prediction."""
        from replay.online import online_summary, replay_online

        costs = profiles_for(self.model, str(engine.device), lambda done, total: self._advance(0, done / total))
        step_ms = online_step_ms(costs["continuous"], self.slots)
        timed = [replace(r, arrival=round(r.arrival * step_ms)) for r in self.requests]
        runs = {}
        for k, policy in enumerate(("static", "continuous"), start=1):
            runs[policy] = replay_online(
                engine,
                timed,
                self.slots,
                policy,
                on_pass=lambda done, total, k=k: self._advance(k, done / total),
                cancel=self.cancel,
            )
        return {"online": True, **runs, "summary": online_summary(runs, costs), "step_ms": step_ms}

    def _advance(self, phase: int, fraction: float) -> None:
        # Online: profiling is the first tenth of the bar, then each policy takes half of the rest.
        self.progress = 0.1 * fraction if phase == 0 else 0.1 + 0.45 * (phase - 1 + fraction)


_PROFILES: dict[tuple[str, str], dict] = {}  # (model, device) -> both policies' profiles, measured once per server


def profiles_for(model: str, device: str, on_point=None) -> dict:
    """Return this model's profiles on this device (`batchviz calibrate`'s grids), measuring them the first time."""
    key = (model, device)
    if key not in _PROFILES:
        from replay.calibrate import profiles

        _PROFILES[key] = profiles(model, device, on_point=on_point)
    return _PROFILES[key]


def online_step_ms(profile, slots: int) -> float:
    """Return one arrival step on the wall clock: a full decode pass of `slots` rows (whole ms, at least 1).

    So the traffic loads the real engine as the step timeline shows it.
    """
    return max(1.0, round(float(profile.pass_ms(slots, 0, slots * 128))))


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
    measurements = param.ClassSelector(class_=Measurements, doc="Where the replay's step times go (the knee reads)")

    @property
    def measured(self) -> dict:
        """Return the last replay's continuous step time (ms) by batch size."""
        return self.measurements.step_ms_by_batch

    def __init__(self, **params):
        params.setdefault("measurements", Measurements())
        super().__init__(**params)
        self.available = torch_available()
        self.job: ReplayJob | None = None
        self.model = PresetSelect(label="Model preset", options=["tiny", "small"], value="tiny", width=140)
        self.model.param.watch(lambda e: e.new and self._say(e.new), "refused")
        self.online = pn.widgets.Checkbox(
            label="In real time, predicted", value=False, width=190, css_classes=["bv-online"]
        )
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
        self.job = ReplayJob(list(s.traffic()), s.slots, self.model.value, online=self.online.value)
        refused = self.job.start()
        if refused:
            self._say(refused)
            return
        self.run_button.disabled, self.cancel_button.disabled = True, False
        self.progress.visible, self.progress.value = True, 0
        how = "profiling the model, then in real time" if self.job.online else "schedule first, then the model"
        self._status(f"Replaying {len(self.job.requests)} requests on {s.slots} slots ({how})…")
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
        self.results.objects = self._render_online(job.result) if "online" in job.result else self._render(job.result)

    def _render(self, runs: dict) -> list:
        from replay.report import summary

        static, continuous = runs["static"], runs["continuous"]
        doc = summary(static, continuous)
        self.measurements.step_ms_by_batch = dict(doc["step_ms_by_batch"]["continuous"])
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

    def _render_online(self, result: dict) -> list:
        from replay.online import FIGURES, format_error

        doc, static, continuous = result["summary"], result["static"], result["continuous"]
        decode = continuous.run.pass_prefill == 0
        rows, ms = continuous.run.pass_rows[decode], continuous.run.pass_ms[decode]
        self.measurements.step_ms_by_batch = {int(b): float(ms[rows == b].mean()) for b in set(rows.tolist())}
        head = "".join(f"<th>{p} predicted</th><th>measured</th><th>error</th>" for p in doc["policies"])
        body = []
        for name, _ in FIGURES:
            cells = []
            for policy in doc["policies"]:
                f = doc["policies"][policy]["figures"][name]
                cells.append(
                    f"<td>{f['predicted']:,.1f}</td><td data-measured>{f['measured']:,.1f}</td>"
                    f'<td data-error="{policy}">{format_error(f["error"])}</td>'
                )
            body.append(f'<tr data-figure="{html.escape(name)}"><th>{html.escape(name)}</th>{"".join(cells)}</tr>')
        overhead = ", ".join(f"{p} {doc['policies'][p]['overhead_share']:.1%}" for p in doc["policies"])
        text = (
            f'<div class="bv-replay">Model <b>{doc["model"]}</b> on <b data-replay="device">{doc["device"]}</b>, '
            f"in real time: requests arrived on the wall clock (one arrival step = {result['step_ms']:g} ms, a full "
            "decode pass here) and the simulator's own schedulers decided each pass from what had arrived. The "
            "prediction is the simulator on a profile of this model measured on this machine just before. "
            f'Measured speedup <b data-replay="measured">{doc["measured_speedup"]:.2f}×</b>, predicted '
            f'<b data-replay="predicted">{doc["predicted_speedup"]:.2f}×</b>. Time outside the model per pass: '
            f"{overhead}.</div>"
            f'<table class="bv-h2h" data-replay="online"><tr><th></th>{head}</tr>{"".join(body)}</table>'
        )
        x_range = Range1d(0, max(static.run.drain_ms, continuous.run.drain_ms))
        return [
            pn.pane.HTML(text, sizing_mode="stretch_width", stylesheets=[CSS]),
            pn.pane.Bokeh(wallclock_figure(static, x_range, "replay-static"), sizing_mode="stretch_width"),
            pn.pane.Bokeh(wallclock_figure(continuous, x_range, "replay-continuous"), sizing_mode="stretch_width"),
        ]

    @property
    def title(self) -> str:
        """Return the replay's disclosure title: what it does, or that this server cannot."""
        if self.available:
            return "Real replay: the same schedules through a real model"
        return "Real replay (not on this server)"

    def body(self) -> pn.Column:
        """Return the replay's controls and results, made when its disclosure first opens (few learners run it)."""
        if not self.available:
            return pn.Column(
                pn.pane.HTML(f'<div class="bv-replay-off">{ENABLE_TEXT}</div>', stylesheets=[CSS]),
                sizing_mode="stretch_width",
            )
        return pn.Column(
            pn.pane.Markdown(
                "Runs the traffic shown, static then continuous, through a randomly initialised transformer "
                "on this server's GPU if it has one, else its CPU, and measures every step in wall-clock time."
            ),
            pn.FlexBox(self.model, self.online, self.run_button, self.cancel_button, self.progress),
            pn.pane.Bokeh(self.status),
            self.results,
            sizing_mode="stretch_width",
        )

    def __panel__(self):
        return pn.Column(pn.pane.Markdown(f"### {self.title}"), self.body(), sizing_mode="stretch_width")
