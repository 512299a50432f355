"""What a new session costs the server: a few real widgets, the settings made when opened, the story's messages."""

from __future__ import annotations

import json
import logging

import panel as pn
from bokeh.document import Document

from app.shell import App
from app.simulator.widget_data import view_json

MAX_MODELS = 40  # the target: the Bokeh models a new session builds and sends, the page's real widgets


def _session(query: dict | None = None) -> tuple[App, Document]:
    """Build a session's page into a fresh document, as the server does for a new learner."""
    doc = Document()
    app = App(query=query or {})
    doc.add_root(pn.panel(app).get_root(doc))
    return app, doc


def test_a_new_session_builds_at_most_forty_models():
    """The default page, a deep link and the dark theme build at most 40 Bokeh models.

    A link that opens a disclosure adds only that disclosure's widgets, as opening it by hand would.
    """
    for query in ({}, {"slots": ["6"], "seed": ["3"], "mode": ["static"]}, {"theme": ["dark"], "tab": ["quiz"]}):
        _app, doc = _session(query)
        assert len(list(doc.models)) <= MAX_MODELS, query
    _app, plain = _session({"slots": ["6"]})
    app, linked = _session({"slots": ["6"], "clock": ["ms"]})
    assert app.chapter_widget.opened == ["clock"]
    by_hand, doc = _session({"slots": ["6"]})
    by_hand.chapter_widget._handle_msg({"open": "clock"})
    assert len(list(linked.models)) == len(list(doc.models)) > len(list(plain.models))


def test_the_settings_are_made_the_first_time_they_open():
    """A shut disclosure has no widgets; opening it (the browser's message) makes them once; a link opens its own."""
    app, doc = _session()
    widget = app.chapter_widget
    assert widget.more is None and widget.memory is None and widget.clock is None and widget.replay is None
    assert widget.trace is app.upload  # the file input is on the page from the start
    before = len(list(doc.models))
    widget._handle_msg({"open": "memory"})
    made = widget.memory
    assert made is not None and len(list(doc.models)) > before  # its slider, choice and note reach the page
    widget._handle_msg({"open": "memory"})
    assert widget.memory is made  # once
    linked = App(query={"kv_blocks": ["30"], "lengths": ["fixed"]}).chapter_widget
    assert linked.opened == ["more", "memory"] and linked.more is not None and linked.memory is not None


def test_story_buttons_press_what_they_name_and_a_bad_message_is_one_log_line(caplog):
    """A lesson button sets its lesson's settings; a message naming no button changes nothing and logs one line."""
    app = App()
    widget = app.chapter_widget
    index = widget.buttons["lessons"].index("Fixed lengths, all queued at step 0")
    widget._handle_msg({"group": "lessons", "index": index})
    assert (app.state.lengths, app.state.arrival_window, app.state.slots) == ("fixed", 1, 4)
    before = app.state.param.values()
    with caplog.at_level(logging.INFO, logger="batchviz.server"):
        for bad in ({"group": "lessons", "index": 99}, {"group": "nope", "index": 0}, {"index": -1}, "x", None,
                    {"group": "lessons", "index": "0"}, {"open": "state"}):  # fmt: skip
            widget._handle_msg(bad)
    assert app.state.param.values() == before
    assert len([r for r in caplog.records if "ignored a story button" in r.getMessage()]) == 7


def test_the_traffic_buttons_show_a_way_back():
    """The chapter's traffic hides its own button; any trace shows the way back to generated traffic."""
    app = App()
    assert app.chapter_widget.hidden == ["traffic:1"]
    app.press("traffic", 0)  # the worked example
    assert app.chapter_widget.hidden == []
    app.press("traffic", 2)  # generated traffic
    assert app.chapter_widget.hidden == ["traffic:2"]


def test_the_view_carries_the_story_the_page_draws():
    """The view JSON holds the full head-to-head, what holds here and, on the worked example only, its figures."""
    app = App()
    view = json.loads(view_json(app.chapter_widget._key()))
    rows = {row[0]: row[2:] for row in view["h2h"]["rows"]}
    assert rows["completed"] == ["7/12", "11/12"] and view["worked"] is None  # the chapter's 7 against 11
    assert view["here"].startswith('<p class="bv-here"')
    app.press("traffic", 0)
    worked = json.loads(view_json(app.chapter_widget._key()))["worked"]
    assert worked is not None and "data-worked" in worked
