"""The class deployment, tested: Debian's nginx with the shipped site in front of two `batchviz serve` workers.

Sessions opened through the proxy get the core's timelines when their seed moves; a page and its websocket reach one
worker; static files pass; a foreign origin is refused; and with one worker killed, new pages go to the other.
"""

from __future__ import annotations

import base64
import concurrent.futures
import functools
import os
import re
import socket
import time
import urllib.request

import pytest

from benchmarks.load import Watcher, _expected_generating, close, shown_run
from deploy.local import HOST, NGINX, start_class
from deploy.nginx_conf import SHIPPED, shipped_text


@pytest.fixture(scope="module")
def deployment():
    """Run nginx on a free loopback port in front of two workers; every process group is stopped at teardown.

    Never skipped: on a machine without nginx it fails and says how to install it.
    """
    assert os.access(NGINX, os.X_OK), f"{NGINX} is missing: run ./dev test, which installs Debian's nginx"
    d = start_class(num_workers=2, session_expiry=2)
    yield d
    d.stop()


def _off_the_loop(test):
    """Run a test body in its own thread, where Bokeh's client session may start its own event loop.

    The browser tests' sync Playwright keeps an asyncio loop running in the main thread for the whole session.
    """

    @functools.wraps(test)
    def run(*args, **kwargs):
        with concurrent.futures.ThreadPoolExecutor(max_workers=1) as pool:
            return pool.submit(test, *args, **kwargs).result()

    return run


def _get(url: str) -> tuple[int, str]:
    with urllib.request.urlopen(url, timeout=30) as r:
        return r.status, r.read().decode("utf-8", "replace")


def _handshake(port: int, origin: str, token: str = "") -> tuple[int, socket.socket]:
    """Open a websocket to /main/ws through the proxy as a browser on `origin` would; return the status and socket."""
    sock = socket.create_connection((HOST, port), timeout=30)
    key = base64.b64encode(os.urandom(16)).decode()
    protocol = f"bokeh, {token}" if token else "bokeh"
    sock.sendall(
        f"GET /main/ws HTTP/1.1\r\nHost: {HOST}:{port}\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"
        f"Sec-WebSocket-Key: {key}\r\nSec-WebSocket-Version: 13\r\nOrigin: {origin}\r\n"
        f"Sec-WebSocket-Protocol: {protocol}\r\n\r\n".encode()
    )
    return int(sock.recv(4096).split(b" ", 2)[1]), sock


def _upstreams(d, method: str, uri: str) -> list[str]:
    return [row[3] for row in d.access_log() if row[0] == method and row[1] == uri]


def _assert_timeline_is_the_core(watcher: Watcher, seed: int) -> None:
    watcher.change(seed)  # waits until the first column equals the core's, or raises
    want = _expected_generating(seed)
    assert shown_run(watcher.widget) == want


def test_the_shipped_site_file_is_the_tested_one():
    """deploy/nginx/batchviz.conf is what `python -m deploy.nginx_conf` writes, so it cannot drift from the test."""
    assert SHIPPED.read_text() == shipped_text()
    assert "ip_hash;" in SHIPPED.read_text() and "proxy_set_header Upgrade $http_upgrade;" in SHIPPED.read_text()


def test_the_page_and_its_static_resources_load_through_the_proxy(deployment):
    """The page and every script, stylesheet and icon it names answer 200 through nginx."""
    status, html = _get(deployment.url)
    assert status == 200 and "render_items" in html
    paths = sorted(set(re.findall(r'(?:src|href)="((?:\./)?static/[^"]+)"', html)))
    assert any("bokeh.min.js" in p for p in paths) and any("panel.min.js" in p for p in paths)
    for path in paths:
        assert _get(f"http://{HOST}:{deployment.port}/{path.removeprefix('./')}")[0] == 200, path


def test_a_page_and_its_websocket_reach_one_worker_and_a_foreign_origin_is_refused(deployment):
    """The websocket with the page's session token opens (101) on the worker that made the page; evil.example: 403."""
    _, html = _get(deployment.url)
    token = re.search(r'"token":"([^"]+)"', html).group(1)
    status, sock = _handshake(deployment.port, f"http://{HOST}:{deployment.port}", token)
    sock.close()
    assert status == 101
    status, sock = _handshake(deployment.port, "http://evil.example", token)
    sock.close()
    assert status == 403
    pages, sockets = _upstreams(deployment, "GET", "/main"), _upstreams(deployment, "GET", "/main/ws")
    assert pages and sockets and set(pages) | set(sockets) == {pages[-1]}  # ip_hash: one address, one worker


@_off_the_loop
def test_sessions_through_the_proxy_get_the_cores_timeline_when_their_seed_moves(deployment):
    """Three sessions open through nginx; each seed change in each equals the core's continuous timeline."""
    watchers = [Watcher(deployment.url) for _ in range(3)]
    try:
        for seed in (3, 11):  # the page opens on the chapter's traffic; a seed switches it to generated traffic
            for watcher in watchers:
                _assert_timeline_is_the_core(watcher, seed)
    finally:
        for watcher in watchers:
            close(watcher.session)


@_off_the_loop
def test_with_its_worker_killed_a_new_page_renders_on_the_other(deployment):
    """Kill the worker this address is hashed to: nginx routes the next page and websocket to the live one."""
    _get(deployment.url)
    hashed = _upstreams(deployment, "GET", "/main")[-1]
    deployment.kill_worker(int(hashed.rsplit(":", 1)[1]))
    status, html = _get(deployment.url)
    assert status == 200 and "render_items" in html
    watcher = Watcher(deployment.url)
    try:
        _assert_timeline_is_the_core(watcher, 7)
    finally:
        close(watcher.session)
    (live,) = {f"{HOST}:{p}" for p in deployment.workers} - {hashed}
    page_tries = _upstreams(deployment, "GET", "/main")[-1].split(", ")
    assert page_tries == [hashed, live]  # the first page after the kill tried the dead worker, then the live one
    # nginx logs a websocket when it closes: give the watcher's closing a moment to reach the log.
    for _ in range(50):
        if _upstreams(deployment, "GET", "/main/ws")[-1].split(", ")[-1] == live:
            break
        time.sleep(0.1)
    assert _upstreams(deployment, "GET", "/main/ws")[-1].split(", ")[-1] == live
