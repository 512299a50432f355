"""Changing raw Bokeh models safely when callbacks may run off the event loop (e.g. `panel serve --num-threads`)."""

from __future__ import annotations

from collections.abc import Callable

import panel as pn


def on_document(change: Callable[[], None]) -> None:
    """Run `change` (which edits Bokeh models) now when this thread holds the document, else on its event loop.

    Panel's own widgets and panes schedule their model updates themselves; a raw Bokeh model changed from a worker
    thread would break Bokeh's document lock, so every raw change goes through here.
    """
    doc = pn.state.curdoc
    if doc is not None and doc.session_context is not None and not _holds_lock(doc):
        # Panel ran a widget's event as a coroutine of its own (another change of this document was pending), on
        # the event loop but outside the document's lock: a raw change here would raise Bokeh's "_pending_writes
        # should be non-None". The next tick runs it with the lock.
        doc.add_next_tick_callback(change)
        return
    pn.state.execute(change)


def _holds_lock(doc) -> bool:
    """Return whether the server is inside this document's lock now (Bokeh's session collects writes only then)."""
    session = getattr(doc.session_context, "_session", None)
    return session is None or getattr(session, "_pending_writes", None) is not None
