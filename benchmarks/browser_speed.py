"""In the browser: first load (bytes, time), a seed change to repainted timelines, and playback's frame rate.

`./dev bench browser [--baseline REF]`: with a git ref (e.g. the commit before the browser renderer), that page is
served from a temporary worktree and measured in the same run, and both are printed side by side with the aims.
"""

from __future__ import annotations

import argparse
import os
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.request
from pathlib import Path

from playwright.sync_api import TimeoutError as PlaywrightTimeout
from playwright.sync_api import sync_playwright

from tests.browser.chromium import CHROMIUM, CHROMIUM_ARGS

ROOT = Path(__file__).resolve().parents[1]
READY_JS = "window.Bokeh && Bokeh.documents.length > 0 && Bokeh.documents[0].is_idle"
CASES = [
    ("default traffic (12 requests, 4 slots)", "?slots=4&seed=4"),
    ("1,000 requests on 32 slots", "?requests=1000&slots=32&seed=4&window=400"),
]
# Fresh loads per case: a first load varies by a third from one to the next on this machine, so five gave a median
# that moved by ~100 ms between runs of the same page.
LOADS = 11
AIMS = {  # issue 23's aims, printed beside each figure
    "load_bytes": "at most half of the baseline's",
    "load_ms": "at most half of the baseline's",
    "repaint": "median < 40 ms, p95 < 80 ms",
    "repaint_big": "p95 < 250 ms",
    "confirm": "median < 100 ms",
    "playback": "60 steps/s at 16 ms, frame gap p95 < 25 ms",
}


class RendererPage:
    """The page drawn by app/web/renderer.js: its paints and the server's confirmations are marked in the page."""

    name = "renderer"
    READY = "window.__bvPaints > 0"

    def watch(self, page) -> None:
        """Mark each paint's next animation frame (when it is on screen) and each server confirmation."""
        page.evaluate(
            """() => { window.__marks = []; window.__confirms = [];
            window.__bvOnPaint = () => requestAnimationFrame(() => window.__marks.push(performance.now()));
            window.__bvOnConfirm = () => window.__confirms.push(performance.now()); }"""
        )

    def seed(self, page):
        """Return the seed control."""
        return page.locator("input[name=seed]")

    def play(self, page, interval_ms: int) -> None:
        """Start playback from step 0 at `interval_ms` per step."""
        page.evaluate(f"window.__bvInterval = {interval_ms}")
        page.get_by_role("button", name="« Start").first.click()
        page.wait_for_timeout(200)
        self.watch(page)
        page.get_by_role("button", name="▶ Play").first.click()


class BokehPage:
    """The page before the renderer: Bokeh figures whose data sources the server replaced on each change."""

    name = "bokeh"
    READY = READY_JS

    def watch(self, page) -> None:
        """Mark the next animation frame after the shown timeline's data changes."""
        page.wait_for_function(READY_JS, polling=50, timeout=60_000)
        page.evaluate(
            """() => { window.__marks = []; window.__confirms = window.__marks;
            const v = Bokeh.index.query_one(v => v.model.name === 'timeline' && v.frame !== undefined);
            const r = v.model.renderers.find(r => r.data_source.data.label !== undefined);
            r.data_source.change.connect(() => requestAnimationFrame(() => window.__marks.push(performance.now())));
            const doc = Bokeh.documents[0];
            const readout = doc.get_model_by_name('playback');
            readout.change.connect(() => requestAnimationFrame(() => window.__marks.push(performance.now()))); }"""
        )

    def seed(self, page):
        """Return the seed slider's handle."""
        return page.locator(".noUi-handle").nth(1)

    def play(self, page, interval_ms: int) -> None:
        """Rewind the Step slider, then start playback at `interval_ms` per step."""
        page.evaluate(
            f"""() => {{ window.__bvInterval = {interval_ms};
            const s = [...Bokeh.documents[0].all_models].find(m => m.title === 'Step' && m.value !== undefined);
            s.value = 0; }}"""
        )
        page.wait_for_timeout(300)
        self.watch(page)
        page.get_by_role("button", name="▶ Play").first.click()


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _serve(cwd: Path) -> tuple[subprocess.Popen, str]:
    port = _free_port()
    env = {**os.environ, "PYTHONPATH": str(cwd)}  # a baseline worktree's packages shadow the installed ones
    proc = subprocess.Popen(
        [sys.executable, "-m", "batchviz", "serve", "--port", str(port)],
        cwd=cwd,
        env=env,
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


def _load(page, kind, url: str, query: str, times: int = LOADS) -> tuple[list[float], list[int]]:
    """Return (ms to first complete render, bytes transferred) for `times` fresh loads."""
    loads, sizes = [], []
    cdp = page.context.new_cdp_session(page)
    cdp.send("Network.enable")
    cdp.send("Network.setCacheDisabled", {"cacheDisabled": True})
    got: list[int] = []
    cdp.on("Network.loadingFinished", lambda e: got.append(int(e["encodedDataLength"])))
    for _ in range(times):
        page.goto("about:blank")
        got.clear()
        t0 = time.perf_counter()
        page.goto(url + query)
        page.wait_for_function(kind.READY, polling=20, timeout=60_000)
        if kind.name == "bokeh":
            page.locator(".bk-Canvas").first.wait_for()
        loads.append((time.perf_counter() - t0) * 1e3)
        page.wait_for_timeout(300)  # late requests (fonts, the websocket's first frames) still count as the load
        sizes.append(sum(got))
    cdp.detach()
    return loads, sizes


def _repaints(page, kind, moves: int = 20) -> tuple[list[float], list[float]]:
    """Return (key press to repainted timeline, key press to the server's confirmation) in ms per seed move."""
    kind.watch(page)
    handle = kind.seed(page)
    handle.focus()
    repaint, confirm = [], []
    for _ in range(moves):
        n_marks, n_conf = page.evaluate("[window.__marks.length, window.__confirms.length]")
        t0 = page.evaluate("performance.now()")
        handle.press("ArrowRight")
        page.wait_for_function(f"window.__marks.length > {n_marks}", polling=5, timeout=30_000)
        page.wait_for_function(f"window.__confirms.length > {n_conf}", polling=5, timeout=30_000)
        repaint.append(page.evaluate(f"window.__marks[{n_marks}]") - t0)
        confirm.append(page.evaluate(f"window.__confirms[{n_conf}]") - t0)
        page.wait_for_timeout(150)
    return repaint, confirm


def _playback(page, kind, url: str, interval_ms: int, steps: int) -> list[float]:
    """Play from step 0 at `interval_ms` per step; return the painted-frame times of `steps` steps."""
    page.goto(url + "?slots=4&seed=4")
    page.wait_for_function(kind.READY, polling=50, timeout=60_000)
    page.wait_for_timeout(500)
    kind.play(page, interval_ms)
    page.wait_for_function(f"window.__marks.length >= {steps}", polling=20, timeout=60_000)
    frames = page.evaluate(f"window.__marks.slice(0, {steps})")
    pause = page.get_by_role("button", name="❚❚ Pause").first
    try:
        if pause.is_visible():
            pause.click(timeout=2_000)
    except PlaywrightTimeout:  # playback ended and the button turned back into Play: nothing left to pause
        pass
    return frames


def measure(kind, url: str) -> dict:
    """Return every figure for one page: loads, repaints, confirmations and playback."""
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        page = browser.new_page(viewport={"width": 1280, "height": 900})
        out = {}
        for label, query in CASES:
            loads, sizes = _load(page, kind, url, query)
            repaint, confirm = _repaints(page, kind)
            out[label] = {"load_ms": loads, "load_bytes": sizes, "repaint": repaint, "confirm": confirm}
        out["playback"] = _playback(page, kind, url, 16, 60)
        browser.close()
    return out


def _stat(values: list[float]) -> str:
    return f"median {statistics.median(values):7.1f}  p95 {_percentile(values, 95):7.1f}"


def _fps(frames: list[float]) -> str:
    gaps = [b - a for a, b in zip(frames, frames[1:])]
    fps = (len(frames) - 1) / ((frames[-1] - frames[0]) / 1e3)
    return f"{fps:5.1f} steps/s, gap median {statistics.median(gaps):4.1f} p95 {_percentile(gaps, 95):5.1f} ms"


def report(results: dict[str, dict]) -> None:
    """Print each page's figures side by side, with the aim for each."""
    names = list(results)
    print(f"headless Chromium, 1280x900; {LOADS} loads and 20 seed moves per case; playback at 16 ms a step, 60 steps")
    for label, _query in CASES:
        print(label)
        big = label.startswith("1,000")
        rows = [
            ("first complete render (ms)", "load_ms", "load_ms"),
            ("bytes transferred (KB)", "load_bytes", "load_bytes"),
            ("seed change to repaint (ms)", "repaint", "repaint_big" if big else "repaint"),
            ("seed change, server confirmed (ms)", "confirm", "confirm"),
        ]
        for title, key, aim in rows:
            print(f"  {title}   [aim: {AIMS[aim]}]")
            for name in names:
                values = results[name][label][key]
                if key == "load_bytes":
                    values = [v / 1024 for v in values]
                print(f"    {name:<10} {_stat(values)}")
    print(f"playback   [aim: {AIMS['playback']}]")
    for name in names:
        print(f"    {name:<10} {_fps(results[name]['playback'])}")


def main(argv: list[str]) -> None:
    """Measure this checkout's page (and a baseline ref's, if asked) and print the figures side by side."""
    parser = argparse.ArgumentParser(prog="./dev bench browser", description=__doc__)
    parser.add_argument("--baseline", metavar="REF", help="also measure this git ref's page, served from a worktree")
    args = parser.parse_args(argv)
    results = {}
    with tempfile.TemporaryDirectory() as tmp:
        pages = [("this", RendererPage(), ROOT)]
        if args.baseline:
            base = Path(tmp) / "baseline"
            subprocess.run(["git", "worktree", "add", "-q", "--detach", str(base), args.baseline], cwd=ROOT, check=True)
            # A ref from before the renderer is measured as the Bokeh page it was; a later one as this page is.
            kind = RendererPage() if (base / "app" / "web" / "renderer.js").exists() else BokehPage()
            pages.insert(0, (f"{args.baseline[:8]}", kind, base))
        try:
            for name, kind, cwd in pages:
                proc, url = _serve(cwd)
                try:
                    results[name] = measure(kind, url)
                finally:
                    os.killpg(proc.pid, signal.SIGTERM)
        finally:
            if args.baseline:
                subprocess.run(["git", "worktree", "remove", "--force", str(base)], cwd=ROOT, check=False)
    report(results)
