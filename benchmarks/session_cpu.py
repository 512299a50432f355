"""A learner's session as the server pays it: server CPU per session for real Chromium pages, opened and closed.

Each session: a fresh browser page opens the default page, waits until the timelines are drawn, and closes. The CPU
counted is everything the server's processes spent from before the first page opened until every session has
expired and been collected (the page's HTML and scripts, the websocket, the app's build, the close, the expiry),
less what the idle server spends over the same time. One session first warms the server (its first build fills
the shared caches), and is not counted. `./dev bench session [N] [--rounds R]`: N sessions per round (default 10),
R rounds (default 2), each printed beside the aim; `--baseline REF` serves that git ref from a worktree too, and the
two servers take their rounds alternately in the same run.
"""

from __future__ import annotations

import argparse
import statistics
import subprocess
import tempfile
import time
from pathlib import Path

from playwright.sync_api import sync_playwright

from benchmarks.load import SETTLE_S, Server, start_server
from core.cli.args import bounded_int
from tests.browser.chromium import CHROMIUM, CHROMIUM_ARGS

ROOT = Path(__file__).resolve().parents[1]
AIM_S = 0.15  # issue 48's aim: a learner's session costs the server at most this much CPU
DRAWN = "window.__bvPaints > 0"  # app/web/renderer.js counts its paints


def open_and_close(browser, url: str) -> float:
    """Open the page in a fresh browser context, wait until drawn, close it; return the seconds it took."""
    t0 = time.perf_counter()
    context = browser.new_context(viewport={"width": 1280, "height": 900})
    page = context.new_page()
    page.goto(url)
    page.wait_for_function(DRAWN, polling=50, timeout=120_000)
    context.close()
    return time.perf_counter() - t0


def idle_rate(server: Server, seconds: float) -> float:
    """Return the server's CPU seconds per second while nobody is on it."""
    before = server.cpu_s()
    time.sleep(seconds)
    return (server.cpu_s() - before) / seconds


def one_round(server: Server, browser, n: int, idle_per_s: float) -> tuple[float, list[float]]:
    """Open and close `n` sessions one after another; return (server CPU per session, each session's seconds)."""
    t0, cpu0 = time.perf_counter(), server.cpu_s()
    walls = [open_and_close(browser, server.url) for _ in range(n)]
    time.sleep(SETTLE_S)  # the closed sessions expire, are dropped and collected: part of what a session costs
    spent = server.cpu_s() - cpu0 - idle_per_s * (time.perf_counter() - t0)
    return spent / n, walls


def warmed(server: Server, browser) -> float:
    """Open one session (the first build fills the caches every later one shares); return the idle CPU rate."""
    open_and_close(browser, server.url)
    time.sleep(SETTLE_S)
    return idle_rate(server, 10.0)


def main(argv: list[str]) -> None:
    """Measure the server CPU a real browser's session costs, in rounds, and print each beside the aim."""
    p = argparse.ArgumentParser(prog="./dev bench session", description=__doc__.split("\n\n")[0])
    p.add_argument("count", nargs="?", type=bounded_int(1, 100), default=10, help="sessions per round, 1..100 (10)")
    p.add_argument("--rounds", type=bounded_int(1, 10), default=2, help="rounds, 1..10 (default 2)")
    p.add_argument("--baseline", metavar="REF", help="also measure this git ref's server, rounds alternating")
    args = p.parse_args(argv)
    with tempfile.TemporaryDirectory() as tmp:
        checkouts = {"this": None}
        if args.baseline:
            base = str(Path(tmp) / "baseline")
            subprocess.run(["git", "worktree", "add", "-q", "--detach", base, args.baseline], cwd=ROOT, check=True)
            checkouts = {args.baseline[:10]: base, "this": None}
        servers = {name: start_server(cwd=cwd) for name, cwd in checkouts.items()}
        try:
            with sync_playwright() as pw:
                browser = pw.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
                idle = {name: warmed(server, browser) for name, server in servers.items()}
                print("batchviz serve on loopback, 1 process each; headless Chromium; the default page")
                print(f"{'server':>12}{'round':>6}{'sessions':>10}{'CPU/session':>13}{'aim':>8}{'open+drawn s':>14}")
                for k in range(args.rounds):
                    for name, server in servers.items():
                        per, walls = one_round(server, browser, args.count, idle[name])
                        wall = statistics.median(walls)
                        row = f"{name:>12}{k + 1:>6}{args.count:>10}{per:>11.3f} s{AIM_S:>7.2f}s{wall:>14.2f}"
                        print(row, flush=True)
                browser.close()
        finally:
            for server in servers.values():
                server.stop()
            if args.baseline:
                subprocess.run(["git", "worktree", "remove", "--force", base], cwd=ROOT, check=False)
