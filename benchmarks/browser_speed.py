"""In the browser: page load, slider change to repainted timeline (20 moves) for two sizes, and playback fps."""

from __future__ import annotations

import argparse
import os
import signal
import socket
import statistics
import subprocess
import sys
import time
import urllib.request

from playwright.sync_api import TimeoutError as PlaywrightTimeout
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
        [sys.executable, "-m", "batchviz", "serve", "--port", str(port)],
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


PLAYBACK_JS = """async ([intervalMs, steps]) => {
  const doc = Bokeh.documents[0];
  const slider = [...doc.all_models].find(m => m.title === 'Step' && m.value !== undefined);
  const readout = doc.get_model_by_name('playback');
  window.__bvInterval = intervalMs;  // app/playback.py's timer reads it
  slider.value = 0;
  const frames = [];
  readout.change.connect(() => requestAnimationFrame(() => frames.push(performance.now())));
  await new Promise(r => setTimeout(r, 200));
  frames.length = 0;  // the rewind to step 0 above is not a playback frame
  window.__frames = frames;
}"""
PLAY_WAIT_JS = """async (steps) => {
  await new Promise(r => {
    const check = () => window.__frames.length >= steps ? r() : setTimeout(check, 20);
    check();
  });
  return window.__frames.slice(0, steps);
}"""


def _measure(page, url: str, query: str, moves: int = 20) -> tuple[list[float], list[float]]:
    """Return (load times, seed-change-to-repaint times) in ms for one traffic setting."""
    loads = []
    for _ in range(5):
        t0 = time.perf_counter()
        page.goto(url + query)
        page.wait_for_function(READY_JS, polling=50, timeout=60_000)
        page.locator(".bk-Canvas").first.wait_for()
        loads.append((time.perf_counter() - t0) * 1e3)
    page.evaluate(WATCH_JS)
    handle = page.locator(".noUi-handle").nth(1)  # the seed slider
    handle.focus()
    repaints = []
    for i in range(moves):
        t0 = page.evaluate("performance.now()")
        handle.press("ArrowRight")
        page.wait_for_function(f"window.__marks.length > {i}", polling=10, timeout=30_000)
        repaints.append(page.evaluate("window.__marks[window.__marks.length - 1]") - t0)
    return loads, repaints


def _playback(page, url: str, interval_ms: int, steps: int) -> list[float]:
    """Play from step 0 at `interval_ms` per step; return the painted-frame times of `steps` steps."""
    page.goto(url + "?slots=4&seed=4")
    page.wait_for_function(READY_JS, polling=50, timeout=60_000)
    page.locator(".bk-Canvas").first.wait_for()  # the app arrives after the page's first render
    page.evaluate(PLAYBACK_JS, [interval_ms, steps])
    page.get_by_role("button", name="▶ Play").first.click()
    frames = page.evaluate(PLAY_WAIT_JS, steps)
    pause = page.get_by_role("button", name="❚❚ Pause").first
    if pause.is_visible():  # playback may have reached the end and turned the button back into Play already
        try:
            pause.click(timeout=2_000)
        except PlaywrightTimeout:  # it flipped to Play between the check and the click: nothing left to pause
            pass
    return frames


def _line(label: str, values: list[float]) -> str:
    return f"  {label:<28} median {statistics.median(values):6.0f} ms   p95 {_percentile(values, 95):6.0f} ms"


CASES = [
    ("default traffic (12 requests, 4 slots)", "?slots=4&seed=4"),
    ("default traffic, one timeline (?both=0)", "?slots=4&seed=4&both=0"),
    ("1,000 requests on 32 slots", "?requests=1000&slots=32&seed=4&window=400"),
]


def main(argv: list[str]) -> None:
    """Print load and repaint times (median and p95) for both cases, and playback's frame rate."""
    argparse.ArgumentParser(prog="./dev bench browser", description=__doc__).parse_args(argv)
    proc, url = _serve()
    results = []
    try:
        with sync_playwright() as p:
            browser = p.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
            page = browser.new_page(viewport={"width": 1280, "height": 900})
            for label, query in CASES:
                results.append((label, *_measure(page, url, query)))
            frames = _playback(page, url, 33, 60)
            browser.close()
    finally:
        os.killpg(proc.pid, signal.SIGTERM)
    print("served by batchviz serve, headless Chromium, 20 seed moves per case (both timelines unless noted)")
    for label, loads, repaints in results:
        print(label)
        print(_line("page load to first render", loads))
        print(_line("seed change to repaint", repaints))
    gaps = [b - a for a, b in zip(frames, frames[1:])]
    fps = (len(frames) - 1) / ((frames[-1] - frames[0]) / 1e3)
    print("playback at a 33 ms step interval (30 steps/s asked), default traffic, 60 steps")
    print(
        f"  {fps:.1f} steps painted per second; frame gap median {statistics.median(gaps):.0f} ms, "
        f"p95 {_percentile(gaps, 95):.0f} ms, max {max(gaps):.0f} ms"
    )
