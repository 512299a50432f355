"""Changing raw Bokeh models safely when callbacks may run off the event loop (e.g. `panel serve --num-threads`)."""

from __future__ import annotations

from collections.abc import Callable

import panel as pn


def on_document(change: Callable[[], None]) -> None:
    """Run `change` (which edits Bokeh models) now when this thread holds the document, else on its event loop.

    Panel's own widgets and panes schedule their model updates themselves; a raw Bokeh model changed from a worker
    thread would break Bokeh's document lock, so every raw change goes through here.
    """
    pn.state.execute(change)
