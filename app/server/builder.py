"""New sessions' apps are built one at a time on a builder thread, so a burst of new pages never stalls open ones.

When the builder is idle, a session's app is built as soon as its page is asked for, while the browser still loads the
page's JavaScript, and put into the page once both the app is built and the page has loaded (put in before the page
has its document, the change could reach a client that drops it: it arrives before the document does). When sessions
are already waiting, a new one is queued once its page has loaded, as a burst's are: built early, a burst's apps
would contend with the pages being served and delay an open session's change by seconds (`./dev bench load`).
"""

from __future__ import annotations

import logging
import queue
import threading
import time
from collections.abc import Callable

import panel as pn
from panel.io.state import set_curdoc

log = logging.getLogger(__name__)
ATTACH_TIMEOUT_S = 30.0
_jobs: queue.Queue = queue.Queue()
_start_lock = threading.Lock()
_worker: threading.Thread | None = None
_in_hand = 0  # jobs queued or being built
_awaiting: set = set()  # jobs built before their page loaded, whose load has not come yet
_count_lock = threading.Lock()
_last_busy = 0.0  # time.monotonic() when a session was last queued or finished building


class Job:
    """One session's app: built on the builder thread, put into its page once built and loaded, whichever is last."""

    def __init__(self, doc, page: pn.Column, build: Callable[[], pn.viewable.Viewable]):
        self.doc, self.page, self.build = doc, page, build
        self._lock = threading.Lock()
        self._content: pn.viewable.Viewable | None = None
        self._loaded = False

    def loaded(self) -> None:
        """The page has loaded (Panel's onload, on the session's event loop): put the app in if it is built."""
        with self._lock:
            self._loaded = True
            content = self._content
        with _count_lock:
            _awaiting.discard(self)
        if content is not None:
            self.page.objects = [content]

    def built(self, content: pn.viewable.Viewable) -> bool:
        """Keep the built app; return whether the page has loaded already (the builder then puts it in)."""
        with self._lock:
            self._content = content
            if not self._loaded:
                with _count_lock:
                    _awaiting.add(self)
            return self._loaded


def idle() -> bool:
    """Return whether no session is waiting for or in the builder, or built and waiting for its page to load.

    A new session may then be built before its page loads. A page that never loads (closed first) stops counting.
    """
    with _count_lock:
        _awaiting.difference_update([job for job in _awaiting if _closed(job.doc)])
        return _in_hand == 0 and not _awaiting


def quiet_for() -> float:
    """Return the seconds since a session was last queued or built (0 while one is): how long no class has arrived."""
    with _count_lock:
        return 0.0 if _in_hand else time.monotonic() - _last_busy


def build_later(doc, page: pn.Column, build: Callable[[], pn.viewable.Viewable]) -> Job:
    """Queue `build()` for `doc`'s session now; call the returned job's `loaded` when the page has loaded.

    One session is built at a time. Where its page has loaded before its app is built, the builder puts the app in
    and waits for that before building the next: the event loop then never holds more than one such attach ahead of
    an open session's slider change, however many pages arrive.
    """
    global _in_hand, _last_busy
    job = Job(doc, page, build)
    _ensure_worker()
    with _count_lock:
        _in_hand += 1
        _last_busy = time.monotonic()
    _jobs.put(job)
    return job


def _done() -> None:
    global _in_hand, _last_busy
    with _count_lock:
        _in_hand -= 1
        _last_busy = time.monotonic()


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
        job = _jobs.get()
        try:
            _one(job)
        finally:
            _done()


def _one(job: Job) -> None:
    """Build one session's app; put it in if its page has loaded, and wait until that is done."""
    if _closed(job.doc):
        return  # the page went away while it waited
    try:
        with set_curdoc(job.doc):
            content = job.build()
    except Exception as exc:  # shown on that page; the builder carries on for everyone else
        log.exception("building a session failed")
        content = pn.pane.Alert(f"The app could not be built: {type(exc).__name__}: {exc}", alert_type="danger")
    if not job.built(content):
        return  # the page's own load puts it in
    attached = threading.Event()

    def attach(content=content, page=job.page, attached=attached) -> None:
        try:
            page.objects = [content]
        finally:
            attached.set()

    job.doc.add_next_tick_callback(attach)  # Bokeh's thread-safe way onto the session's event loop
    if not attached.wait(ATTACH_TIMEOUT_S):
        log.warning("a session's app was not attached within %.0f s", ATTACH_TIMEOUT_S)
