"""The server's garbage collector, kept from holding every open session while a class arrives.

CPython passes over its whole oldest generation whenever that has grown by a quarter, and a session adds about 4,000
long-lived objects: a burst of 100 new sessions set off six such passes of 140-400 ms, each holding every open
session's change behind it. And a closed session's objects are cycles, freed only by Panel's `gc.collect` a few seconds
after it ends: 250 ms for one, 620 ms for a class's 100 (`./dev bench load 100 100`, 2026-12-03). So what every
session shares is frozen once (never scanned again), automatic whole-heap passes are spaced out, and Panel's collection
waits until no new session has come for QUIET_S: while a class arrives, its learners' changes do not wait on it.
"""

from __future__ import annotations

import datetime as dt
import gc
import time

from panel.io import document as panel_document
from panel.io.state import state

from app.server import builder

GEN2_EVERY = 100  # collections of the middle generation between automatic whole-heap passes (CPython's default: 10)
QUIET_S = 5.0  # a collection after a session ends waits until no session has been queued or built for this long
MAX_DEFER_S = 60.0  # but no longer than this: a server never quiet still frees its closed sessions
_TASK = "gc.collect"  # the name Panel schedules its collection under
_panel_collect = panel_document._garbage_collect
_deferred_since: float | None = None


def steady_gc() -> None:
    """Freeze what the server holds before its first session (the app's modules) and space out whole-heap passes."""
    import app.shell  # noqa: F401 - imported here, before the freeze, rather than by the first session

    gc.collect()
    gc.freeze()
    young, middle, _ = gc.get_threshold()
    gc.set_threshold(young, middle, GEN2_EVERY)
    panel_document._garbage_collect = collect_when_quiet  # Panel looks it up by name each time it schedules one


def collect_when_quiet() -> None:
    """Run Panel's collection after a session ended once no session has arrived for QUIET_S (at most MAX_DEFER_S)."""
    global _deferred_since
    now = time.monotonic()
    if _deferred_since is None:
        _deferred_since = now
    wait = QUIET_S - builder.quiet_for()
    if wait > 0 and now - _deferred_since < MAX_DEFER_S:
        state.schedule_task(_TASK, collect_when_quiet, at=dt.datetime.now() + dt.timedelta(seconds=wait))
        return
    _deferred_since = None
    _panel_collect()
