"""The example course page, on another origin, renders the app served by `batchviz serve`."""

import functools
import http.server
import os
import signal
import subprocess
import sys
import threading

import pytest

from app.server.embed import course_page
from core import simulate
from core.chapter.chapter_traffic import chapter_traffic

from .conftest import _free_port, wait_until_up
from .helpers import READY_JS
from .pixels import read_timeline


@pytest.fixture
def served_app(course_port):
    """Run the real `batchviz serve` command, allowing the course page's origin; yield the app URL."""
    port = _free_port()
    cmd = [
        sys.executable,
        "-m",
        "batchviz",
        "serve",
        "--port",
        str(port),
        "--allow-websocket-origin",
        f"127.0.0.1:{course_port}",
    ]
    proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True)
    url = f"http://127.0.0.1:{port}/main"
    try:
        wait_until_up(url)
        yield url
    finally:
        os.killpg(proc.pid, signal.SIGTERM)
        proc.wait(timeout=20)


def test_course_page_renders_the_embedded_app(page, page_errors, served_app, course_port, tmp_path, artifacts):
    """The page embeds the served app with server_document; its timeline reads back as the core's."""
    (tmp_path / "index.html").write_text(course_page(served_app))
    handler = functools.partial(http.server.SimpleHTTPRequestHandler, directory=str(tmp_path))
    httpd = http.server.ThreadingHTTPServer(("127.0.0.1", course_port), handler)
    threading.Thread(target=httpd.serve_forever, daemon=True).start()
    try:
        page.set_viewport_size({"width": 900, "height": 1000})
        page.goto(f"http://127.0.0.1:{course_port}/index.html")
        page.wait_for_function(READY_JS, polling=100, timeout=30_000)
        page.locator("canvas[data-timeline]").first.wait_for(timeout=30_000)
        page.screenshot(path=artifacts / "course-page.png", full_page=True)
        assert read_timeline(page, 4, 64) == simulate(chapter_traffic(), 4, "continuous").timeline_strings(64)
    finally:
        httpd.shutdown()
