"""New sessions' apps are built one at a time on a builder thread, so a burst of new pages never stalls open ones."""

from __future__ import annotations

import logging
import queue
import threading
from collections.abc import Callable

import panel as pn
from panel.io.state import set_curdoc

log = logging.getLogger(__name__)
ATTACH_TIMEOUT_S = 30.0
_jobs: queue.Queue = queue.Queue()
_start_lock = threading.Lock()
_worker: threading.Thread | None = None


def build_later(doc, page: pn.Column, build: Callable[[], pn.viewable.Viewable]) -> None:
    """Queue `build()` for `doc`'s session: built on the builder thread, then put into `page` on the event loop.

    One session is in hand at a time, and the next is built only once the previous one is attached: the event loop
    then never holds more than one attach ahead of an open session's slider change, however many pages arrive.
    """
    _ensure_worker()
    _jobs.put((doc, page, build))


def _ensure_worker() -> None:
    global _worker
    with _start_lock:
        if _worker is None or not _worker.is_alive():
            _worker = threading.Thread(target=_work, name="batchviz-session-builder", daemon=True)
            _worker.start()


def _closed(doc) -> bool:
    context = doc.session_context
    return context is None or getattr(context, "destroyed", False)


def _work() -> None:
    while True:
        doc, page, build = _jobs.get()
        if _closed(doc):
            continue  # the page went away while it waited
        try:
            with set_curdoc(doc):
                content = build()
        except Exception as exc:  # shown on that page; the builder carries on for everyone else
            log.exception("building a session failed")
            content = pn.pane.Alert(f"The app could not be built: {type(exc).__name__}: {exc}", alert_type="danger")
        attached = threading.Event()

        def attach(content=content, page=page, attached=attached) -> None:
            try:
                page.objects = [content]
            finally:
                attached.set()

        doc.add_next_tick_callback(attach)  # Bokeh's thread-safe way onto the session's event loop
        if not attached.wait(ATTACH_TIMEOUT_S):
            log.warning("a session's app was not attached within %.0f s", ATTACH_TIMEOUT_S)
