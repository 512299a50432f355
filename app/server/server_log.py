"""The server's log: one line for each bad message a client sends, and none for a tab closed while it was sent to.

A client can send anything over the websocket (an upgrade without Bokeh's subprotocol, a frame without `msgid`, a
widget value outside its range); Bokeh and Tornado log each with a 20-40 line traceback. What a client causes is not
the server's fault: it gets one line naming the message and what was wrong. A tab closed while an update was on its
way is not an error at all.
"""

from __future__ import annotations

import logging
import warnings

from bokeh.util.warnings import BokehUserWarning

# Loggers whose records carry a traceback a client can cause (Bokeh's websocket and protocol handlers, Tornado's
# uncaught request errors, asyncio's "Task exception was never retrieved").
CLIENT_LOGGERS = ("bokeh.server.views.ws", "bokeh.server.protocol_handler", "tornado.application", "asyncio")
CLOSED = ("WebSocketClosedError", "StreamClosedError")  # the tab went away while the server was writing to it
log = logging.getLogger("batchviz.server")


def _flat(text: str, limit: int = 300) -> str:
    text = " ".join(str(text).split())
    return text if len(text) <= limit else text[: limit - 1] + "…"


# What a client's message raises on its way in: the only records Tornado's and asyncio's loggers flatten (any other
# exception there is the server's own bug, and keeps its traceback).
CLIENT_ERRORS = ("ProtocolError", "ValidationError", "JSONDecodeError", *CLOSED)
MESSAGE_LOGGERS = ("bokeh.server.views.ws", "bokeh.server.protocol_handler")  # they handle one client message each


class OneLine(logging.Filter):
    """Turn a record a client caused into one line: the message and the exception's type and words."""

    def filter(self, record: logging.LogRecord) -> bool:
        """Flatten `record` in place when a client caused it (always kept; a closed tab's record drops to DEBUG)."""
        if not record.exc_info or record.exc_info[1] is None:
            return True
        exc = record.exc_info[1]
        closed = _closed_under_tornado(exc)
        if record.name not in MESSAGE_LOGGERS and type(exc).__name__ not in CLIENT_ERRORS and not closed:
            return True  # the server's own error: its traceback is what finds it
        record.msg = f"{_flat(record.getMessage())} ({type(exc).__name__}: {_flat(exc, 200)})"
        record.args, record.exc_info, record.exc_text, record.stack_info = (), None, None, None
        if type(exc).__name__ in CLOSED or closed:
            record.levelno, record.levelname = logging.DEBUG, "DEBUG"
        return True


# Where a websocket gone under the server fails a bare `assert`: Tornado finishing an upgrade, Bokeh closing one.
GONE_CHECKS = ("tornado/websocket.py", "bokeh/server/connection.py")


def _closed_under_tornado(exc: BaseException) -> bool:
    """Return whether `exc` is Tornado's or Bokeh's own check that a websocket is still there, failed in their code.

    A client that upgrades without Bokeh's subprotocol and leaves at once: Bokeh refuses it (a ProtocolError, one
    line), and Tornado, still finishing the upgrade, finds its connection gone (`assert self.ws_connection is not
    None` in tornado/websocket.py). A client that closes its socket after its session was discarded: Bokeh's
    `on_close` asks the connection for it (`assert self._session is not None` in bokeh/server/connection.py). The
    client left; nothing of ours failed.
    """
    if not isinstance(exc, AssertionError) or exc.args:
        return False
    tb = exc.__traceback__
    while tb is not None and tb.tb_next is not None:
        tb = tb.tb_next
    return tb is not None and tb.tb_frame.f_code.co_filename.replace("\\", "/").endswith(GONE_CHECKS)


def refused(what: str, value, allowed: str) -> None:
    """Log one line for a value the page's websocket sent that the app refused (the widget is put back)."""
    log.warning("refused %s=%s from the page (allowed %s)", what, _flat(repr(value), 60), allowed)


def install() -> None:
    """Add the one-line filter to every logger a client's message can reach (once per process).

    And silence Bokeh's "reference already known" warning: BokehJS (3.7 on) encodes a Button in full inside its own
    click event, though the server made it, so each first click of a button made after the page loaded (the Memory
    tab's Step: built when its tab opens) warns. Harmless: the server keeps its own instance
    (bokeh/core/serialization.py); HoloViews filters the same warning (holoviz/holoviews#6529).
    """
    warnings.filterwarnings("ignore", "reference already known", BokehUserWarning)
    _no_traceback_in_replies()
    for name in CLIENT_LOGGERS:
        logger = logging.getLogger(name)
        if not any(isinstance(f, OneLine) for f in logger.filters):
            logger.addFilter(OneLine())


def _no_traceback_in_replies() -> None:
    """Keep the server's tracebacks out of its ERROR replies: the client gets what was wrong, the log the rest.

    Bokeh's `ERROR` message puts the handling exception's whole traceback in the reply (bokeh/protocol/messages/
    error.py reads `sys.exc_info()`), which tells any client our paths and code. Once per process.
    """
    from bokeh.protocol.messages.error import error

    if getattr(error.create, "batchviz", False):
        return
    create = error.create.__func__

    def without_traceback(cls, request_id, text, **metadata):
        reply = create(cls, request_id, text, **metadata)
        reply.content["traceback"] = None
        return reply

    without_traceback.batchviz = True
    error.create = classmethod(without_traceback)


def follow_widget(widget, event: str, owner, name: str, convert=lambda v: v) -> None:
    """Set `owner.name` from `widget`'s `event` as the URL's values are set: one refused is logged, the widget put back.

    The websocket can carry any value (a pool of -3 blocks); the parameter's bounds refuse it and the widget shows
    the value kept again, so the page and the state never disagree.
    """

    def take(e) -> None:
        try:
            setattr(owner, name, convert(e.new))
        except (ValueError, TypeError):
            p = owner.param[name]
            allowed = getattr(p, "bounds", None) or getattr(p, "objects", None)
            refused(name, e.new, str(allowed))
            widget.value = getattr(owner, name)

    widget.param.watch(take, event)
