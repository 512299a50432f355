"""`panel serve --setup` for batchviz: gzip the page and its files (2.9 MB to 0.7 MB, each once); steady GC and GIL."""

from __future__ import annotations

import gc
import sys

from bokeh.server.tornado import BokehTornado
from tornado.web import GZipContentEncoding

from app.server.static_gzip import serve_static_gzipped
from app.server_gc import steady_gc


def compress(app: BokehTornado) -> None:
    """Make a running Tornado application gzip its responses (Tornado's `compress_response`)."""
    if GZipContentEncoding not in app.transforms:
        app.transforms.append(GZipContentEncoding)


def compress_every_server() -> None:
    """Compress from the servers made from now on, and from any already made (`--num-procs` runs this after)."""
    original = BokehTornado.__init__
    if not getattr(original, "_bv_compress", False):

        def init(self, *args, **kwargs):
            kwargs.setdefault("compress_response", True)
            original(self, *args, **kwargs)

        init._bv_compress = True
        BokehTornado.__init__ = init
    for obj in gc.get_objects():
        if isinstance(obj, BokehTornado):
            compress(obj)


# The session builder's thread holds the GIL for its whole build, and the event loop gives it up at every socket call:
# at CPython's 5 ms switch interval, a burst's 100 websocket opens took 10-14 ms each. At 1 ms, an open session's change
# behind a burst of 100 came back at p95 153-372 ms against 233-447 ms (`./dev bench load 100`, four runs each,
# 2026-12-03).
SWITCH_INTERVAL_S = 0.001

compress_every_server()
serve_static_gzipped()
sys.setswitchinterval(SWITCH_INTERVAL_S)
steady_gc()  # last: what the setup imported is frozen with the rest
