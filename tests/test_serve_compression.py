"""`batchviz serve` gzips the page and its static JavaScript (each file once), with one process and --num-procs."""

from __future__ import annotations

import gzip
import os
import re
import tempfile
import time
import urllib.request

import pytest
from tornado.testing import AsyncHTTPTestCase
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


class TestStaticFilesGzippedOnce(AsyncHTTPTestCase):
    """A static file is gzipped on its first request and served from those bytes after; Range and plain stay raw."""

    def get_app(self):
        """A Tornado app serving one script from a temporary folder, gzipping its responses as the server does."""
        serve_static_gzipped()
        self.root = tempfile.mkdtemp()
        self.text = b"function draw(rows) { return rows.map(r => r * 2); }\n" * 400
        with open(os.path.join(self.root, "page.js"), "wb") as f:
            f.write(self.text)
        return Application([(r"/s/(.*)", StaticFileHandler, {"path": self.root})], compress_response=True)

    def test_gzipped_once_then_from_the_cache(self):
        """Three requests: one gzip call; each body the file's bytes gzipped, its length the header's."""
        calls = []
        real = static_gzip.gzip.compress

        def counting(data, **kwargs):
            calls.append(len(data))
            return real(data, **kwargs)

        static_gzip.gzip.compress = counting
        try:
            bodies = [
                self.fetch("/s/page.js", headers={"Accept-Encoding": "gzip"}, decompress_response=False)
                for _ in range(3)
            ]
        finally:
            static_gzip.gzip.compress = real
        assert calls == [len(self.text)]  # once, for three requests
        for response in bodies:
            assert response.headers["Content-Encoding"] == "gzip"
            assert int(response.headers["Content-Length"]) == len(response.body) < len(self.text) / 5
            assert gzip.decompress(response.body) == self.text
        assert bodies[0].body == bodies[2].body

    def test_a_changed_file_is_gzipped_again(self):
        """A file changed on disk is served as it now is, not from the cache."""
        self.fetch("/s/page.js", headers={"Accept-Encoding": "gzip"}, decompress_response=False)
        path = os.path.join(self.root, "page.js")
        with open(path, "wb") as f:
            f.write(b"const changed = 1;\n" * 300)
        os.utime(path, (time.time() + 5, time.time() + 5))
        response = self.fetch("/s/page.js", headers={"Accept-Encoding": "gzip"}, decompress_response=False)
        assert gzip.decompress(response.body) == b"const changed = 1;\n" * 300

    def test_range_and_plain_requests_are_served_as_tornado_serves_them(self):
        """A client without gzip gets the raw file; a Range request gets its range of the file, as Tornado serves it."""
        plain = self.fetch("/s/page.js", headers={"Accept-Encoding": "identity"}, decompress_response=False)
        assert "Content-Encoding" not in plain.headers and plain.body == self.text
        ranged = self.fetch(
            "/s/page.js", headers={"Accept-Encoding": "gzip", "Range": "bytes=10-19"}, decompress_response=False
        )
        body = gzip.decompress(ranged.body) if ranged.headers.get("Content-Encoding") == "gzip" else ranged.body
        assert ranged.code == 206 and body == self.text[10:20]  # as Tornado serves a range: its bytes, not the cache's
