"""The server's collector (app/server_gc.py): set up by `panel serve --setup`; Panel's collection put off in a burst."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from app import server_gc
from app.server import builder


def test_the_serve_setup_freezes_the_shared_heap_spaces_whole_heap_passes_and_takes_panels_collection():
    """Run as `panel serve --setup` runs it, in a fresh interpreter: a dropped session schedules our collection."""
    script = """
import gc, json, runpy, sys, types
runpy.run_path("app/serve_setup.py")
from bokeh.document import Document
from panel.io import document as panel_document
from panel.io.state import state
import app.server_gc as server_gc
doc = Document()
doc.destroy = types.MethodType(panel_document._destroy_document, doc)  # as Panel sets it on a served document
doc.destroy(None)  # what a dropped session runs
scheduled = [cb for _, cb in state._scheduled.values()]
loaded = "app.shell" in sys.modules
ours = server_gc.collect_when_quiet in scheduled
print(json.dumps({"frozen": gc.get_freeze_count(), "threshold": gc.get_threshold(), "ours": ours, "loaded": loaded,
                  "switch": sys.getswitchinterval()}))
"""
    out = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=120, check=True)
    got = json.loads(out.stdout.strip().splitlines()[-1])
    assert got["frozen"] > 50_000  # the app's modules and everything they import
    assert got["threshold"][2] == server_gc.GEN2_EVERY
    assert got["loaded"] and got["ours"]
    assert got["switch"] == pytest.approx(0.001)  # the event loop gets the GIL back from the builder within 1 ms


@pytest.fixture
def clock(monkeypatch):
    """Drive collect_when_quiet by hand: its clock, the builder's quiet time, what it schedules and collects."""
    state = {"now": 1000.0, "quiet": 0.0, "scheduled": [], "collected": 0}
    monkeypatch.setattr(server_gc.time, "monotonic", lambda: state["now"])
    monkeypatch.setattr(builder, "quiet_for", lambda: state["quiet"])
    monkeypatch.setattr(server_gc.state, "schedule_task", lambda name, cb, at=None: state["scheduled"].append(cb))
    monkeypatch.setattr(server_gc, "_panel_collect", lambda: state.__setitem__("collected", state["collected"] + 1))
    monkeypatch.setattr(server_gc, "_deferred_since", None)
    return state


def test_panels_collection_waits_while_sessions_arrive_and_runs_once_they_stop(clock):
    clock["quiet"] = 0.0  # a session is being built
    server_gc.collect_when_quiet()
    assert clock["collected"] == 0 and clock["scheduled"] == [server_gc.collect_when_quiet]
    clock["now"] += 3.0
    clock["quiet"] = server_gc.QUIET_S - 0.5  # the last one came a little under QUIET_S ago
    server_gc.collect_when_quiet()
    assert clock["collected"] == 0 and len(clock["scheduled"]) == 2
    clock["now"] += 1.0
    clock["quiet"] = server_gc.QUIET_S + 0.5
    server_gc.collect_when_quiet()
    assert clock["collected"] == 1 and len(clock["scheduled"]) == 2


def test_a_server_never_quiet_still_collects_after_max_defer(clock):
    clock["quiet"] = 0.0
    server_gc.collect_when_quiet()
    clock["now"] += server_gc.MAX_DEFER_S - 1
    server_gc.collect_when_quiet()
    assert clock["collected"] == 0
    clock["now"] += 2
    server_gc.collect_when_quiet()
    assert clock["collected"] == 1
    server_gc.collect_when_quiet()  # the next one waits again, from its own start
    assert clock["collected"] == 1


def test_the_builder_is_not_quiet_while_a_session_is_in_hand(monkeypatch):
    monkeypatch.setattr(builder, "_in_hand", 1)
    assert builder.quiet_for() == 0.0
    monkeypatch.setattr(builder, "_in_hand", 0)
    monkeypatch.setattr(builder, "_last_busy", builder.time.monotonic() - 7.0)
    assert 7.0 <= builder.quiet_for() < 60.0
