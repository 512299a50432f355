"""`batchviz serve` gzips the page and its static JavaScript (each file once), with one process and --num-procs."""

from __future__ import annotations

import asyncio
import gzip
import os
import re
import threading
import time
import urllib.request

import pytest
from tornado.web import Application, StaticFileHandler

from app.server import static_gzip
from app.server.static_gzip import serve_static_gzipped
from benchmarks.load import start_server


def _get(url: str) -> tuple[str, bytes]:
    request = urllib.request.Request(url, headers={"Accept-Encoding": "gzip"})
    with urllib.request.urlopen(request, timeout=30) as response:
        return response.headers.get("Content-Encoding", ""), response.read()


@pytest.mark.parametrize("num_procs", [1, 2])
def test_the_page_and_bokehs_bundle_arrive_gzipped(num_procs):
    """The page and bokeh.min.js come gzipped and unpack to what they are; the bundle shrinks to under a third."""
    server = start_server(num_procs)
    try:
        encoding, body = _get(server.url)
        assert encoding == "gzip"
        page = gzip.decompress(body).decode()
        src = re.search(r'src="(static/js/bokeh\.min\.js[^"]*)"', page).group(1)
        encoding, body = _get(server.url.rsplit("/", 1)[0] + "/" + src)
        assert encoding == "gzip"
        bundle = gzip.decompress(body)
        assert bundle.startswith(b"/*!") or b"Bokeh" in bundle[:2000]
        assert len(body) < len(bundle) / 3
    finally:
        server.stop()


TEXT = b"function draw(rows) { return rows.map(r => r * 2); }\n" * 400


@pytest.fixture
def static_url(tmp_path):
    """Serve one script from a Tornado app that gzips as the server does, on its own loop in a thread.

    Its own loop: the suite's may be running already (the browser tests leave one).
    """
    serve_static_gzipped()
    (tmp_path / "page.js").write_bytes(TEXT)
    ready, box = threading.Event(), {}

    def run():
        loop = asyncio.new_event_loop()
        asyncio.set_event_loop(loop)
        app = Application([(r"/s/(.*)", StaticFileHandler, {"path": str(tmp_path)})], compress_response=True)
        server = app.listen(0, "127.0.0.1")
        box["port"] = next(iter(server._sockets.values())).getsockname()[1]
        box["loop"] = loop
        ready.set()
        loop.run_forever()

    threading.Thread(target=run, daemon=True).start()
    assert ready.wait(10)
    yield f"http://127.0.0.1:{box['port']}/s/page.js", tmp_path / "page.js"
    box["loop"].call_soon_threadsafe(box["loop"].stop)


def _fetch(url: str, **headers) -> tuple[int, dict, bytes]:
    request = urllib.request.Request(url, headers=headers)
    with urllib.request.urlopen(request, timeout=30) as response:
        return response.status, dict(response.headers), response.read()


def test_a_static_file_is_gzipped_once_then_served_from_the_cache(static_url, monkeypatch):
    """Three requests: one gzip call; each body the file's bytes gzipped, its length the header's."""
    url, _path = static_url
    calls = []
    real = static_gzip.gzip.compress
    monkeypatch.setattr(static_gzip.gzip, "compress", lambda data, **kw: calls.append(len(data)) or real(data, **kw))
    bodies = [_fetch(url, **{"Accept-Encoding": "gzip"}) for _ in range(3)]
    assert calls == [len(TEXT)]  # once, for three requests
    for _status, headers, body in bodies:
        assert headers["Content-Encoding"] == "gzip"
        assert int(headers["Content-Length"]) == len(body) < len(TEXT) / 5
        assert gzip.decompress(body) == TEXT


def test_a_changed_static_file_is_gzipped_again(static_url):
    """A file changed on disk is served as it now is, not from the cache."""
    url, path = static_url
    _fetch(url, **{"Accept-Encoding": "gzip"})
    path.write_bytes(b"const changed = 1;\n" * 300)
    os.utime(path, (time.time() + 5, time.time() + 5))
    _status, _headers, body = _fetch(url, **{"Accept-Encoding": "gzip"})
    assert gzip.decompress(body) == b"const changed = 1;\n" * 300


def test_plain_and_range_requests_are_served_as_tornado_serves_them(static_url):
    """A client without gzip gets the raw file; a Range request gets its range of the file."""
    url, _path = static_url
    _status, headers, body = _fetch(url, **{"Accept-Encoding": "identity"})
    assert "Content-Encoding" not in headers and body == TEXT
    status, headers, body = _fetch(url, **{"Accept-Encoding": "gzip", "Range": "bytes=10-19"})
    body = gzip.decompress(body) if headers.get("Content-Encoding") == "gzip" else body
    assert status == 206 and body == TEXT[10:20]
