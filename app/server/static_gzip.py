"""Static files gzipped once per file, not once per request: each learner's first load fetches about 2.9 MB of scripts.

Tornado's `compress_response` gzips every response as it is written; for the static files (Bokeh's and Panel's
scripts, the page's modules) that was 40% of the server CPU a learner's session cost (`./dev bench session`). Here a
static file asked for with `Accept-Encoding: gzip` is served from its gzipped bytes, made on its first request and
kept while the file is unchanged; the response says `Content-Encoding: gzip`, so the transform leaves it alone (it
still adds `Vary`). A Range request, a client without gzip and a type not worth compressing are served as Tornado
serves them.
"""

from __future__ import annotations

import gzip
import threading

from tornado.web import GZipContentEncoding, StaticFileHandler

_CACHE: dict[tuple[str, float], bytes] = {}  # (absolute path, mtime) -> gzipped bytes; a few files, a few MB
_LOCK = threading.Lock()
_ORIGINAL = StaticFileHandler.set_extra_headers


def gzipped(absolute_path: str, mtime: float) -> bytes:
    """Return the file's bytes gzipped (Tornado's level), from the cache when it holds this version."""
    key = (absolute_path, mtime)
    with _LOCK:
        hit = _CACHE.get(key)
    if hit is None:
        with open(absolute_path, "rb") as f:
            hit = gzip.compress(f.read(), compresslevel=GZipContentEncoding.GZIP_LEVEL, mtime=0)
        with _LOCK:
            for old in [k for k in _CACHE if k[0] == absolute_path]:
                del _CACHE[old]
            _CACHE[key] = hit
    return hit


def _wants_gzip(handler: StaticFileHandler) -> bool:
    request = handler.request
    if "Range" in request.headers or "gzip" not in request.headers.get("Accept-Encoding", ""):
        return False
    ctype = handler.get_content_type().split(";")[0]
    return ctype.startswith("text/") or ctype in GZipContentEncoding.CONTENT_TYPES


def _set_extra_headers(self: StaticFileHandler, path: str) -> None:
    _ORIGINAL(self, path)
    if not _wants_gzip(self):
        return
    body = gzipped(self.absolute_path, self.modified.timestamp() if self.modified else 0.0)
    self.set_header("Content-Encoding", "gzip")
    # get() asks the size, then the content, after the headers: this response's are the gzipped bytes'.
    self.get_content_size = lambda: len(body)
    self.get_content = lambda _path, start=None, end=None: [body[start:end]]


def serve_static_gzipped() -> None:
    """Serve every static file handler's files gzipped once (idempotent)."""
    if StaticFileHandler.set_extra_headers is not _set_extra_headers:
        StaticFileHandler.set_extra_headers = _set_extra_headers
