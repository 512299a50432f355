"""Serve the app in the test process and drive Debian's Chromium through pytest-playwright."""

from __future__ import annotations

import socket
import time
import urllib.request
from pathlib import Path

import pytest

from .chromium import CHROMIUM, CHROMIUM_ARGS

VIEWPORT = {"width": 1280, "height": 900}
ARTIFACTS = Path(__file__).resolve().parents[2] / "artifacts" / "screenshots"


def pytest_addoption(parser):
    """Add --update-goldens: rewrite the golden images instead of comparing with them."""
    parser.addoption("--update-goldens", action="store_true", help="regenerate tests/browser/goldens/*.png")


def pytest_collection_modifyitems(items):
    """Mark every test under tests/browser as a browser test."""
    for item in items:
        if "tests/browser" in str(item.fspath):
            item.add_marker(pytest.mark.browser)


@pytest.fixture(scope="session")
def browser_type_launch_args(browser_type_launch_args):
    """Launch the system Chromium: Playwright cannot download its own browser here."""
    return {**browser_type_launch_args, "executable_path": CHROMIUM, "args": CHROMIUM_ARGS}


@pytest.fixture(scope="session")
def browser_context_args(browser_context_args):
    """A fixed viewport at scale 1, so pixel colours and positions are exact."""
    return {**browser_context_args, "viewport": VIEWPORT, "device_scale_factor": 1}


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def wait_until_up(url: str, timeout: float = 60) -> None:
    """Poll `url` until it answers, or raise after `timeout` seconds."""
    deadline = time.time() + timeout
    while True:
        try:
            urllib.request.urlopen(url, timeout=5).read()
            return
        except OSError:
            if time.time() > deadline:
                raise
            time.sleep(0.2)


@pytest.fixture(scope="session")
def course_port() -> int:
    """The port the example course page is served from (an origin the app must allow)."""
    return _free_port()


@pytest.fixture(scope="session")
def app_url(course_port):
    """Serve app/main.py's app on a free port in a thread; yield its URL; stop it at the end."""
    import panel as pn

    from app.main import create_app

    port = _free_port()
    server = pn.serve(
        {"main": create_app},
        port=port,
        address="127.0.0.1",
        show=False,
        threaded=True,
        websocket_origin=[f"127.0.0.1:{port}", f"127.0.0.1:{course_port}"],
        start=True,
    )
    url = f"http://127.0.0.1:{port}/main"
    wait_until_up(url)
    yield url
    server.stop()


@pytest.fixture
def page_errors(page):
    """Collect uncaught page errors; every browser test asserts there are none."""
    errors: list[str] = []
    page.on("pageerror", lambda exc: errors.append(str(exc)))
    yield errors
    assert errors == [], f"page errors: {errors}"


@pytest.fixture
def artifacts() -> Path:
    """The folder CI keeps screenshots in."""
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    return ARTIFACTS
