"""The app inside the example course page: offline CSS, links that open in place, and the first screen at 800 px."""

from __future__ import annotations

import functools
import http.server
import re
import threading

import pytest
from playwright.sync_api import expect

from app.page.frame import TABS

from .helpers import READY_JS, open_app
from .test_embed import served_app  # noqa: F401 - the real `batchviz serve`, a fixture

LOOPBACK = ("http://127.0.0.1:", "ws://127.0.0.1:", "data:", "blob:")
# Every stylesheet link in the page and in every shadow root, and whether the browser parsed it (a failed load has
# no sheet).
STYLESHEETS_JS = """() => { const out = [];
  const walk = (root) => { for (const el of root.querySelectorAll('*')) {
    if (el.tagName === 'LINK' && el.rel === 'stylesheet') out.push([el.href, el.sheet !== null]);
    if (el.shadowRoot) walk(el.shadowRoot); } };
  walk(document); return out; }"""
ACTIVE_TAB_JS = """() => { const found = [];
  const walk = (root) => { for (const el of root.querySelectorAll('*')) {
    if (el.classList.contains('bv-tab') && el.classList.contains('bv-active')) found.push(el.textContent.trim());
    if (el.shadowRoot) walk(el.shadowRoot); } };
  walk(document); return found[0] || null; }"""
TIMELINE_BOX_JS = """() => {
  const r = window.__bvWidget.timelines[0].canvas.getBoundingClientRect();
  return [r.top, r.bottom]; }"""


@pytest.fixture
def course_url(served_app, course_port, tmp_path):  # noqa: F811 - pytest's fixture by name
    """Serve the example course page (app/web/course_page.template.html around the served app); yield its URL."""
    from app.server.embed import course_page

    (tmp_path / "index.html").write_text(course_page(served_app))
    handler = functools.partial(http.server.SimpleHTTPRequestHandler, directory=str(tmp_path))
    httpd = http.server.ThreadingHTTPServer(("127.0.0.1", course_port), handler)
    threading.Thread(target=httpd.serve_forever, daemon=True).start()
    yield f"http://127.0.0.1:{course_port}/index.html"
    httpd.shutdown()


def open_course(page, url: str) -> None:
    """Open the course page and wait until the embedded app has drawn its timeline."""
    page.goto(url)
    page.wait_for_function(READY_JS, polling=100, timeout=30_000)
    page.wait_for_function("window.__bvPaints > 0", timeout=30_000)


def test_embedded_app_loads_every_stylesheet_with_no_network(page, page_errors, course_url):
    """In the course page, every request that would leave the machine is blocked: none is made, all CSS loads."""
    assert_offline_page_is_whole(page, lambda: open_course(page, course_url))


def test_app_page_loads_every_stylesheet_with_no_network(page, page_errors, app_url):
    """On the app's own page, the same: nothing is asked of another machine and every stylesheet loads."""
    assert_offline_page_is_whole(page, lambda: open_app(page, app_url))


def assert_offline_page_is_whole(page, load) -> None:
    """Block every non-loopback request, `load()` the page, assert none was made and every stylesheet loaded."""
    left, failed = [], []

    def route(request_route):
        url = request_route.request.url
        if url.startswith(LOOPBACK):
            request_route.continue_()
        else:
            left.append(url)
            request_route.abort()

    page.route("**/*", route)
    page.on("requestfailed", lambda request: failed.append(request.url))
    page.on("response", lambda r: r.status >= 400 and failed.append(f"{r.status} {r.url}"))
    load()
    page.wait_for_timeout(1000)  # late stylesheets of widgets built after the load
    sheets = page.evaluate(STYLESHEETS_JS)
    assert left == []
    assert failed == []
    assert len(sheets) >= 8 and all(loaded for _href, loaded in sheets), sheets
    assert all(href.startswith(LOOPBACK) for href, _ in sheets)


def test_in_app_links_open_inside_the_embed_and_keep_the_host_url(page, page_errors, course_url):
    """Clicking the story's `?tab=knee` link opens Exercise 1 in the embed; the host page neither reloads nor moves."""
    open_course(page, course_url)
    page.evaluate("window.__bvStayed = true")  # gone if the page reloads
    host = page.url
    assert page.evaluate(ACTIVE_TAB_JS) == TABS["simulator"]
    page.locator('a[href="?tab=knee"]').first.click()
    page.wait_for_function(f"({ACTIVE_TAB_JS})() === {TABS['knee']!r}", polling=100, timeout=15_000)
    page.wait_for_timeout(500)  # a URL update would come from the server after the tab changed
    assert page.url == host
    assert page.evaluate("window.__bvStayed") is True
    assert page.evaluate("location.href") == host


def test_in_app_links_open_in_place_on_the_app_page(page, page_errors, app_url):
    """On the app's own page the same link opens Exercise 1 with no reload, and the address says ?tab=knee."""
    open_app(page, app_url)
    page.evaluate("window.__bvStayed = true")
    page.locator('a[href="?clock=ms"]').first.click()
    expect(page).to_have_url(re.compile(r"[?&]clock=ms"), timeout=15_000)
    page.locator('a[href="?tab=knee"]').first.click()
    page.wait_for_function(f"({ACTIVE_TAB_JS})() === {TABS['knee']!r}", polling=100, timeout=15_000)
    expect(page).to_have_url(re.compile(r"[?&]tab=knee"), timeout=15_000)
    assert "clock=ms" not in page.url  # a link opens its view as a fresh page would: the clock is reset
    assert page.evaluate("window.__bvStayed") is True


def test_course_page_is_titled_for_the_chapter_and_shows_the_timeline_first(page, page_errors, course_url):
    """The course page is "Continuous batching"; at 800x900 the first timeline is wholly on the first screen."""
    page.set_viewport_size({"width": 800, "height": 900})
    open_course(page, course_url)
    assert page.title() == "Continuous batching"
    expect(page.locator("h1").first).to_have_text("Continuous batching")
    top, bottom = page.evaluate(TIMELINE_BOX_JS)
    assert 0 < top and bottom <= 900, (top, bottom)
