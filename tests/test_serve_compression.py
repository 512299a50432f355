"""`batchviz serve` gzips the page and its static JavaScript, with one process and with --num-procs."""

from __future__ import annotations

import gzip
import re
import urllib.request

import pytest

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
