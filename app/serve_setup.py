"""`panel serve --setup` for batchviz: gzip the page and its static files (2.9 MB to 0.7 MB); a steady collector."""

from __future__ import annotations

import gc

from bokeh.server.tornado import BokehTornado
from tornado.web import GZipContentEncoding

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


compress_every_server()
steady_gc()  # last: what the setup imported is frozen with the rest
