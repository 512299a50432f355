"""A class at once: open N sessions in a burst over loopback (Bokeh's client), while one open session moves a slider.

Prints, per N: time to open them all, errors, server CPU per new session, server memory before, at the peak and after
the sessions close and expire, and the existing session's update latency (median, p95) during the burst.
`./dev bench load [N ...] [--num-procs K] [--proxy]`; `--proxy`: through nginx (deploy/) in front of K workers (default
2), each `batchviz serve` on its own port. Bounded: at most MAX_SESSIONS sessions and DEADLINE_S seconds per burst.
"""

from __future__ import annotations

import argparse
import json
import multiprocessing
import os
import signal
import socket
import statistics
import subprocess
import sys
import time
import urllib.request
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field

import panel  # noqa: F401 - bokeh.client needs Panel's models registered before it pulls a Panel document
from bokeh.client import pull_session
from bokeh.document.events import MessageSentEvent
from bokeh.events import DocumentReady
from panel.models.esm import ReactiveESM

from app.page.page_agent import PageAgent  # noqa: F401 - registers its data model too: every page holds one
from app.page.upload import TraceUpload  # noqa: F401 - registers its data model, which the client must decode
from app.simulator.widget import ChapterWidget  # noqa: F401 - registers its data model, which the client must decode
from app.simulator.widget_data import run_arrays
from core import TrafficConfig, generate, simulate
from core.cli.args import bounded_int
from deploy.local import Deployment, start_class

MAX_SESSIONS = 200
DEADLINE_S = 180.0
EXPIRY_S = 2  # the server drops a closed session's state after this (the bench's `--session-expiry`)
# After a burst the bench waits for its sessions to be dropped (2-4 s after they close) and for Panel's collection of
# them (5-8 s after that, app/server_gc.py), so the next burst never meets that collection (seen: one of 575 ms).
SETTLE_S = 15
HOST = "127.0.0.1"


@dataclass
class Server:
    """A `batchviz serve` process group on loopback."""

    proc: subprocess.Popen
    url: str

    def pids(self) -> list[int]:
        """Return the server's processes (the parent and any workers of --num-procs)."""
        out = subprocess.run(["pgrep", "-g", str(self.proc.pid)], capture_output=True, text=True).stdout
        return [int(p) for p in out.split()] or [self.proc.pid]

    def cpu_s(self) -> float:
        """Return the CPU seconds (user + system) all the server's processes have used."""
        ticks = os.sysconf("SC_CLK_TCK")
        total = 0.0
        for pid in self.pids():
            try:
                fields = open(f"/proc/{pid}/stat").read().rsplit(")", 1)[1].split()
                total += (int(fields[11]) + int(fields[12])) / ticks
            except OSError:
                pass
        return total

    def rss_mb(self) -> float:
        """Return the resident memory of all the server's processes, in MB."""
        total = 0
        for pid in self.pids():
            try:
                for line in open(f"/proc/{pid}/status"):
                    if line.startswith("VmRSS:"):
                        total += int(line.split()[1])
            except OSError:
                pass
        return total / 1024

    def stop(self) -> None:
        """Stop the whole process group (workers of --num-procs included)."""
        try:
            os.killpg(self.proc.pid, signal.SIGTERM)
            self.proc.wait(timeout=10)
        except (ProcessLookupError, subprocess.TimeoutExpired):
            os.killpg(self.proc.pid, signal.SIGKILL)


@dataclass
class ProxiedServer(Server):
    """nginx with the shipped site in front of K `batchviz serve` workers (deploy/local.py); measured over all."""

    deployment: Deployment | None = None

    def pids(self) -> list[int]:
        """Return every worker's and nginx's processes."""
        groups = [*self.deployment.workers.values(), self.deployment.nginx]
        out = subprocess.run(["pgrep", "-g", ",".join(str(p.pid) for p in groups)], capture_output=True, text=True)
        return [int(p) for p in out.stdout.split()]

    def stop(self) -> None:
        """Stop nginx and every worker."""
        self.deployment.stop()


def start_proxied(num_workers: int = 2) -> ProxiedServer:
    """Start nginx and `num_workers` workers on free loopback ports, with short session expiry."""
    deployment = start_class(num_workers, session_expiry=EXPIRY_S)
    return ProxiedServer(deployment.nginx, deployment.url, deployment)


def start_server(num_procs: int = 1, cwd: str | None = None) -> Server:
    """Start `batchviz serve` on a free loopback port, with short session expiry; return once it answers.

    `cwd`: serve that checkout (a baseline's worktree) instead of the installed one.
    """
    with socket.socket() as s:
        s.bind((HOST, 0))
        port = s.getsockname()[1]
    argv = [sys.executable, "-m", "batchviz", "serve", "--port", str(port), "--session-expiry", str(EXPIRY_S)]
    argv += ["--num-procs", str(num_procs)] if num_procs > 1 else []
    env = {**os.environ, "PYTHONPATH": cwd} if cwd else None  # a worktree's packages shadow the installed ones
    proc = subprocess.Popen(
        argv, cwd=cwd, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True
    )
    url = f"http://{HOST}:{port}/main"
    for _ in range(300):
        try:
            urllib.request.urlopen(url, timeout=5).read()
            return Server(proc, url)
        except OSError:
            time.sleep(0.2)
    proc.kill()
    raise RuntimeError("the server did not start")


def run_until(session, predicate, timeout: float) -> bool:
    """Run a client session's own loop until `predicate()` or `timeout` seconds; return the predicate's value."""
    conn = session._connection
    handle = conn._loop.call_later(timeout, conn._loop.stop)
    try:
        conn._loop_until(predicate)
    finally:
        conn._loop.remove_timeout(handle)
    return predicate()


def close(session) -> None:
    """Close a client session and let its loop send the close frame, so the server sees the page go."""
    session._connection._loop.add_callback(session.close)  # closed from inside its own loop, on any thread
    run_until(session, lambda: not session.connected, 5.0)


def open_page(url: str, timeout: float = DEADLINE_S):
    """Open a session as a browser does: pull the document, say it is ready, wait until the app is in it."""
    session = pull_session(url=url)
    doc = session.document
    # A browser sends document_ready once it has rendered; the server then builds the app (on a worker thread).
    doc.callbacks.trigger_on_change(MessageSentEvent(doc, "bokeh_event", DocumentReady()))
    if not run_until(session, lambda: chapter_widget(doc) is not None, timeout):
        raise TimeoutError(f"the app did not arrive within {timeout:.0f} s")
    return session


def chapter_widget(doc):
    """Return the data model of the page's chapter widget (app/simulator/widget.py), or None before the app arrived."""
    return next((m.data for m in doc.select({"type": ReactiveESM}) if "payload" in m.data.properties()), None)


RUN_KEYS = ("policy", "slots", "drain", "start", "finish", "slot", "release")  # the timeline (KV aside)


def _expected_generating(seed: int) -> dict:
    """Return the core's continuous run at this seed as the widget receives it (flat per-request arrays)."""
    arrays = run_arrays(simulate(generate(TrafficConfig(seed=seed)), 4, "continuous"))
    return {key: arrays[key] for key in RUN_KEYS}


def shown_run(widget) -> dict:
    """Return the continuous run of the view the widget's last payload carries: its timeline's arrays."""
    run = json.loads(widget.payload)["view"]["runs"]["continuous"]
    return {key: run[key] for key in RUN_KEYS}


class Watcher:
    """One open session that moves the widget's seed and times each change until the server's new view arrives."""

    def __init__(self, url: str):
        self.session = open_page(url)
        doc = self.session.document
        # The chapter's widget (app/simulator/widget.py): its settings and payload are properties of its data model.
        self.widget = chapter_widget(doc)
        self.latencies: list[float] = []
        self.errors: list[str] = []

    def change(self, seed: int, timeout: float = 60.0) -> float:
        """Set the seed from the client; return seconds until the view equals the core's run for that seed."""
        want = _expected_generating(seed)
        t0 = time.perf_counter()
        self.widget.seed = seed
        if not run_until(self.session, lambda: shown_run(self.widget)["start"] == want["start"], timeout):
            raise TimeoutError(f"seed {seed}: no new timeline within {timeout:.0f} s")
        return time.perf_counter() - t0

    def run(self, stop: Callable[[], bool]) -> None:
        """Move the seed back and forth until `stop()`, recording each latency."""
        seeds = [5, 6, 7, 8]
        k = 0
        while not stop():
            try:
                self.latencies.append(self.change(seeds[k % len(seeds)]))
            except Exception as exc:  # counted, and the bench goes on
                self.errors.append(f"update: {exc}")
            k += 1
            time.sleep(0.1)


def watch(url: str, ready, stop, results) -> None:
    """Open a session and move its slider until `stop`; put (latencies, errors) on `results`.

    It runs in its own process, so the burst's clients never slow it down.
    """
    watcher = Watcher(url)
    watcher.change(3)  # warm (the page opens on the chapter's traffic): the first change also builds caches
    ready.set()
    watcher.run(stop.is_set)
    close(watcher.session)
    results.put((watcher.latencies, watcher.errors))


@dataclass
class BurstResult:
    """What one burst of N new sessions measured."""

    n: int
    open_s: float
    errors: list[str]
    cpu_per_session_s: float
    rss_before_mb: float
    rss_peak_mb: float
    rss_after_mb: float
    latencies: list[float] = field(default_factory=list)

    def p(self, q: float) -> float:
        """Return the q-th percentile of the existing session's update latencies (seconds)."""
        xs = sorted(self.latencies)
        return xs[min(len(xs) - 1, int(round(q / 100 * (len(xs) - 1))))] if xs else float("nan")


def _open_one(url: str):
    t0 = time.perf_counter()
    return open_page(url), time.perf_counter() - t0


def burst(server: Server, n: int) -> BurstResult:
    """Open `n` sessions at once while a watcher moves a slider; close them; measure the server."""
    n = min(n, MAX_SESSIONS)
    ctx = multiprocessing.get_context("spawn")
    ready, stop, results = ctx.Event(), ctx.Event(), ctx.Queue()
    watcher = ctx.Process(target=watch, args=(server.url, ready, stop, results), daemon=True)
    watcher.start()
    if not ready.wait(120):
        raise RuntimeError("the watching session did not open")
    rss_before, cpu_before = server.rss_mb(), server.cpu_s()
    errors: list[str] = []
    sessions = []
    t0 = time.perf_counter()
    pool = ThreadPoolExecutor(max_workers=n)
    futures = [pool.submit(_open_one, server.url) for _ in range(n)]
    for f in futures:
        try:
            sessions.append(f.result(timeout=max(1.0, DEADLINE_S - (time.perf_counter() - t0)))[0])
        except Exception as exc:  # counted: the bench must report errors, not stop at the first
            errors.append(f"open: {type(exc).__name__}: {exc}")
    pool.shutdown(wait=False, cancel_futures=True)
    open_s = time.perf_counter() - t0
    cpu_per_session = (server.cpu_s() - cpu_before) / max(n, 1)
    time.sleep(1.0)  # a few more updates after the burst, and the peak settles
    stop.set()
    latencies, watch_errors = results.get(timeout=120)
    watcher.join(timeout=30)
    rss_peak = server.rss_mb()
    with ThreadPoolExecutor(max_workers=8) as closer:  # never on the caller's thread, which may run a loop already
        list(closer.map(close, sessions))
    time.sleep(SETTLE_S)  # closed sessions expire, are dropped and collected
    return BurstResult(
        n,
        open_s,
        errors + watch_errors,
        cpu_per_session,
        rss_before,
        rss_peak,
        server.rss_mb(),
        latencies,
    )


def _row(r: BurstResult) -> str:
    med = statistics.median(r.latencies) * 1e3 if r.latencies else float("nan")
    return (
        f"{r.n:>6}{r.open_s:>9.1f}{len(r.errors):>7}{r.cpu_per_session_s * 1e3:>10.0f}"
        f"{r.rss_before_mb:>9.0f}{r.rss_peak_mb:>8.0f}{r.rss_after_mb:>8.0f}"
        f"{(r.rss_peak_mb - r.rss_before_mb) / max(r.n, 1):>9.2f}{med:>9.0f}{r.p(95) * 1e3:>8.0f}{len(r.latencies):>6}"
    )


def main(argv: list[str]) -> None:
    """Run bursts of 10, 50 and 100 sessions (or the counts given) against one server; print a table."""
    p = argparse.ArgumentParser(prog="./dev bench load", description=__doc__.split("\n\n")[0])
    p.add_argument(
        "counts",
        nargs="*",
        type=bounded_int(1, MAX_SESSIONS),
        help=f"burst sizes, 1..{MAX_SESSIONS} (default 10 50 100)",
    )
    p.add_argument("--num-procs", type=bounded_int(1, 64), help="server worker processes (default 1; 2 with --proxy)")
    p.add_argument("--proxy", action="store_true", help="through nginx (deploy/) in front of the workers (default off)")
    args = p.parse_args(argv)
    counts, proxy = args.counts or [10, 50, 100], args.proxy
    procs = args.num_procs or (2 if proxy else 1)
    server = start_proxied(procs) if proxy else start_server(procs)
    try:
        where = f"nginx in front of {procs} worker(s), one port each" if proxy else f"{procs} process(es)"
        print(f"batchviz serve on loopback, {where}; sessions via bokeh.client; expiry {EXPIRY_S} s")
        print(
            f"{'N':>6}{'open s':>9}{'errors':>7}{'cpu ms/s':>10}{'MB pre':>9}{'peak':>8}{'after':>8}"
            f"{'MB/sess':>9}{'upd p50':>9}{'p95 ms':>8}{'upds':>6}"
        )
        for n in counts:
            result = burst(server, n)
            print(_row(result), flush=True)
            for error in result.errors[:5]:
                print(f"       {error}")
    finally:
        server.stop()
