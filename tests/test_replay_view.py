"""The app's replay section without a browser: the worker thread, one replay per server, cancel, no-torch text."""

import html
import time

import numpy as np
from bokeh.models import LabelSet, Range1d

from app.real_replay import view as replay_view
from app.real_replay.figures import wallclock_data, wallclock_figure
from app.real_replay.view import ReplayJob, ReplayView
from app.simulator.state import SimState
from core import TrafficConfig, generate

SMALL = generate(TrafficConfig(seed=3, requests=6, mean_prompt_tokens=4))


def _wait(job: ReplayJob, timeout: float = 60) -> None:
    deadline = time.time() + timeout
    while not job.done:
        assert time.time() < deadline, "replay did not finish"
        time.sleep(0.02)


def test_job_runs_both_policies_off_the_caller_thread():
    """start() returns at once; the worker fills in both replays and releases the server."""
    job = ReplayJob(SMALL, 2)
    assert job.start() == ""
    _wait(job)
    assert job.error == "" and set(job.result) == {"static", "continuous"}
    assert job.progress == 1.0
    again = ReplayJob(SMALL, 2)
    assert again.start() == ""  # the server is free again
    _wait(again)


def test_one_replay_at_a_time_per_server():
    """While one replay holds the server a second is refused with a message; cancel frees it."""
    long = generate(TrafficConfig(seed=1, requests=300))
    first = ReplayJob(long, 1)
    assert first.start() == ""
    second = ReplayJob(SMALL, 2)
    assert second.start() == "A replay is already running on this server; try again when it finishes."
    first.cancel.set()
    _wait(first)
    assert first.error == "Replay cancelled." and first.result is None


def test_wallclock_rectangles_follow_the_measured_clock():
    """Each request's rectangle spans the measured time of its steps; static padding runs to its batch's end."""
    job = ReplayJob(SMALL, 2)
    job.start()
    _wait(job)
    static = job.result["static"]
    data = wallclock_data(static)
    clock = np.concatenate([[0.0], np.cumsum(static.step_ms)])
    assert data["generating"]["left"] == clock[static.run.start].tolist()
    assert data["generating"]["right"] == clock[static.run.finish].tolist()
    assert len(data["padding"]["left"]) == int((static.run.release > static.run.finish).sum())
    # Named as the step timeline names them (issue 47: the replay's timelines had no slot or request labels)
    fig = wallclock_figure(static, Range1d(0, 1), "replay-static")
    assert fig.yaxis[0].visible and fig.yaxis[0].major_label_overrides == {
        s + 0.5: f"slot{s}" for s in range(static.run.slots)
    }
    labels = [r for r in fig.center if isinstance(r, LabelSet)]
    assert len(labels) == 1 and labels[0].source.data["id"] == [r.id for r in static.run.requests]
    assert labels[0].source.data["mid"] == [s + 0.5 for s in static.run.slot.tolist()]


def test_without_torch_the_view_says_how_to_enable_it(monkeypatch):
    """No torch: the section explains how to install it, and nothing tries to import it."""
    monkeypatch.setattr(replay_view, "torch_available", lambda: False)
    view = ReplayView(state=SimState())
    html = view.body().objects[0].object
    assert view.title == "Real replay (not on this server)"
    assert "pip install torch==2.13.0" in html and "The rest of the app works without it." in html


def test_replay_errors_are_escaped_in_the_status_box():
    """Exception text is shown as text: markup in it never reaches the page as HTML."""
    view = ReplayView(state=SimState())
    view._say("Replay failed: <img src=x onerror=alert(1)>")
    assert "<img" not in view.status.text and "&lt;img src=x onerror=alert(1)&gt;" in view.status.text


def test_a_forced_preset_is_refused_with_a_message():
    """A browser that sends a preset not in the list gets a message; the server keeps its preset and logs nothing."""
    view = ReplayView(state=SimState())
    view.model._process_events({"value": "gpt2"})
    assert view.model.value == "tiny"
    assert html.escape("Model preset 'gpt2' is not offered here; choose tiny or small.") in view.status.text
    view.status.text = ""
    view.model._process_events({"value": "gpt2"})  # the same refusal again still says so
    assert "is not offered here" in view.status.text
    view.model._process_events({"value": "small"})
    assert view.model.value == "small"


class _Session:
    def __init__(self, connections: int):
        self.connection_count = connections


class _Context:
    def __init__(self, connections: int):
        self._session = _Session(connections)


class _Doc:
    def __init__(self, connections: int):
        self.session_context = _Context(connections)


def test_a_closed_page_cancels_its_replay_at_the_next_poll():
    """When the page's websocket closes (no connection left), the next poll cancels the job and frees the server."""
    view = ReplayView(state=SimState())
    view.job = ReplayJob(generate(TrafficConfig(seed=1, requests=300)), 1)
    assert view.job.start() == ""
    view._poll = type("Poll", (), {"stop": lambda self: None})()
    view._doc = _Doc(connections=1)
    view._check()
    assert not view.job.cancel.is_set()
    view._doc = _Doc(connections=0)
    view._check()
    assert view.job.cancel.is_set()
    _wait(view.job)
    assert view.job.error == "Replay cancelled."
    assert replay_view.session_closed(None) is False


def test_a_request_past_the_context_is_refused_with_a_message():
    """A trace whose prompt does not fit the model is refused before anything is allocated, and the server frees."""
    from core import Request

    job = ReplayJob([Request("A", 0, 4, 9000)], 2)
    assert job.start() == ""
    _wait(job)
    assert job.error.startswith("Replay refused: request A: prompt 9,000 + output 4 tokens is over the model's context")
    assert not replay_view._SERVER_LOCK.locked()


def test_the_replay_and_the_knee_share_one_store_not_each_other():
    """The page's replay writes its step times to the Measurements store; the knee view reads the same store."""
    from app.shell import App

    app = App()
    assert app.replay.measurements is app.knee.measurements
    app.replay.measurements.step_ms_by_batch = {1: 2.0, 4: 2.5}
    assert app.knee.measured == {1: 2.0, 4: 2.5}
