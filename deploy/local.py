"""Start a class on loopback: K `batchviz serve` workers on their own ports and nginx in front (deploy/nginx_conf.py).

Every process starts in its own session (process group); `Deployment.stop()` ends each group, nothing is left behind.
"""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import tempfile
import time
import urllib.request
from dataclasses import dataclass, field
from pathlib import Path

from .nginx_conf import standalone

NGINX = "/usr/sbin/nginx"
HOST = "127.0.0.1"


def free_port() -> int:
    """Return a TCP port on loopback that nothing listens on now."""
    with socket.socket() as s:
        s.bind((HOST, 0))
        return s.getsockname()[1]


def wait_until_up(url: str, timeout: float = 60.0) -> None:
    """Poll `url` until it answers 200, or raise TimeoutError after `timeout` seconds."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            urllib.request.urlopen(url, timeout=5).read()
            return
        except OSError:
            time.sleep(0.2)
    raise TimeoutError(f"{url} did not answer within {timeout:.0f} s")


def _group_alive(pgid: int) -> bool:
    try:
        os.killpg(pgid, 0)
        return True
    except ProcessLookupError:
        return False


def stop_group(proc: subprocess.Popen, timeout: float = 10.0) -> None:
    """End a process group started with start_new_session: SIGTERM, then SIGKILL what is left after `timeout` s."""
    if _group_alive(proc.pid):
        os.killpg(proc.pid, signal.SIGTERM)
    deadline = time.monotonic() + timeout
    while _group_alive(proc.pid) and time.monotonic() < deadline:
        proc.poll()  # reap the leader, or the group never empties
        time.sleep(0.05)
    if _group_alive(proc.pid):
        os.killpg(proc.pid, signal.SIGKILL)
    proc.wait(timeout=timeout)


@dataclass
class Deployment:
    """nginx on `port` in front of one `batchviz serve` per worker port, all on loopback."""

    port: int
    workers: dict[int, subprocess.Popen]
    nginx: subprocess.Popen
    run_dir: Path
    _tmp: tempfile.TemporaryDirectory | None = field(default=None, repr=False)

    @property
    def url(self) -> str:
        """The app's page through the proxy."""
        return f"http://{HOST}:{self.port}/main"

    def access_log(self) -> list[list[str]]:
        """Return nginx's access log as rows of (method, uri, status, upstreams tried: "addr, addr" on a retry)."""
        path = self.run_dir / "access.log"
        return [line.split("|") for line in path.read_text().splitlines()] if path.exists() else []

    def kill_worker(self, port: int) -> None:
        """Kill one worker's whole process group at once (SIGKILL: as a crash would)."""
        proc = self.workers[port]
        os.killpg(proc.pid, signal.SIGKILL)
        proc.wait(timeout=10)

    def stop(self) -> None:
        """Stop nginx and every worker; remove the run directory if this deployment made it."""
        for proc in [self.nginx, *self.workers.values()]:
            stop_group(proc)
        if self._tmp is not None:
            self._tmp.cleanup()


def start_worker(port: int, proxy_port: int, session_expiry: int) -> subprocess.Popen:
    """Start `batchviz serve` on loopback:port, allowing pages served through the proxy as websocket origins."""
    argv = [sys.executable, "-m", "batchviz", "serve", "--port", str(port), "--session-expiry", str(session_expiry)]
    argv += ["--allow-websocket-origin", f"{HOST}:{proxy_port}"]
    return subprocess.Popen(argv, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True)


def start_nginx(run_dir: Path, port: int, worker_ports: list[int]) -> subprocess.Popen:
    """Write run_dir/nginx.conf around the shipped site and run nginx in the foreground of its own group."""
    conf = run_dir / "nginx.conf"
    conf.write_text(standalone(run_dir, port, worker_ports))
    argv = [NGINX, "-p", str(run_dir), "-e", str(run_dir / "error.log"), "-c", str(conf), "-g", "daemon off;"]
    return subprocess.Popen(argv, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True)


def start_class(num_workers: int = 2, session_expiry: int = 15, run_dir: Path | None = None) -> Deployment:
    """Start the workers and nginx on free loopback ports; return once the app answers through the proxy."""
    if not os.access(NGINX, os.X_OK):
        raise RuntimeError(f"{NGINX} is missing: `./dev test` installs Debian's nginx (apt-get install -y nginx)")
    tmp = None if run_dir else tempfile.TemporaryDirectory(prefix="batchviz-nginx-")
    run_dir = Path(run_dir or tmp.name)
    port, worker_ports = free_port(), [free_port() for _ in range(num_workers)]
    workers = {p: start_worker(p, port, session_expiry) for p in worker_ports}
    deployment = Deployment(port, workers, start_nginx(run_dir, port, worker_ports), run_dir, tmp)
    try:
        for p in worker_ports:
            wait_until_up(f"http://{HOST}:{p}/main")
        wait_until_up(deployment.url, timeout=10)
    except BaseException:
        deployment.stop()
        raise
    return deployment
