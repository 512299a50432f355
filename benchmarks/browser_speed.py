"""In the browser: page load to first complete render, and slider change to repainted timeline (20 moves)."""

from __future__ import annotations

import os
import signal
import socket
import statistics
import subprocess
import sys
import time
import urllib.request

from playwright.sync_api import sync_playwright

from tests.browser.chromium import CHROMIUM, CHROMIUM_ARGS

READY_JS = "window.Bokeh && Bokeh.documents.length > 0 && Bokeh.documents[0].is_idle"
WATCH_JS = """() => {
  window.__marks = [];
  const v = Bokeh.index.query_one(v => v.model.name === 'timeline' && v.frame !== undefined);
  const r = v.model.renderers.find(r => r.data_source.data.label !== undefined);
  r.data_source.change.connect(() => requestAnimationFrame(() => window.__marks.push(performance.now())));
}"""


def _serve() -> tuple[subprocess.Popen, str]:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    proc = subprocess.Popen(
        [sys.executable, "-m", "core", "serve", "--port", str(port)],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        start_new_session=True,
    )
    url = f"http://127.0.0.1:{port}/main"
    for _ in range(300):
        try:
            urllib.request.urlopen(url, timeout=5).read()
            break
        except OSError:
            time.sleep(0.2)
    return proc, url


def _percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(round(q / 100 * (len(ordered) - 1))))]


def main(argv: list[str]) -> None:
    """Print load and repaint times (median and p95) for the default traffic."""
    proc, url = _serve()
    try:
        with sync_playwright() as p:
            browser = p.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
            page = browser.new_page(viewport={"width": 1280, "height": 900})
            loads = []
            for _ in range(5):
                t0 = time.perf_counter()
                page.goto(url + "?slots=4&seed=4")
                page.wait_for_function(READY_JS, polling=50, timeout=30_000)
                page.locator(".bk-Canvas").first.wait_for()
                loads.append((time.perf_counter() - t0) * 1e3)
            page.evaluate(WATCH_JS)
            handle = page.locator(".noUi-handle").nth(1)  # the seed slider
            handle.focus()
            repaints = []
            for i in range(20):
                t0 = page.evaluate("performance.now()")
                handle.press("ArrowRight")
                page.wait_for_function(f"window.__marks.length > {i}", polling=10, timeout=10_000)
                repaints.append(page.evaluate("window.__marks[window.__marks.length - 1]") - t0)
            browser.close()
    finally:
        os.killpg(proc.pid, signal.SIGTERM)
    print("default traffic (12 requests, 4 slots), served by batchviz serve, headless Chromium")
    print(
        f"  page load to first render  median {statistics.median(loads):6.0f} ms   p95 {_percentile(loads, 95):6.0f} ms"
    )
    print(
        f"  seed change to repaint     median {statistics.median(repaints):6.0f} ms   "
        f"p95 {_percentile(repaints, 95):6.0f} ms   (20 moves)"
    )
