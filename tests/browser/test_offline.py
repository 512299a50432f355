"""A classroom without internet: the served page asks nothing of any other machine, on any tab or disclosure."""

from __future__ import annotations

from urllib.parse import urlsplit

import pytest

from app.page.frame import TABS

from .helpers import open_app

LOCAL = ("127.0.0.1", "localhost", "[::1]")


@pytest.mark.parametrize("query", ["", "?theme=dark"], ids=["light", "dark"])
def test_the_served_page_requests_nothing_beyond_its_server(page, page_errors, app_url, query):
    """Every request the page makes (stylesheets, scripts, fonts, the websocket) goes to the app's own host."""
    outside: list[str] = []

    def only_local(route) -> None:
        url = route.request.url
        if url.startswith(("data:", "blob:")) or urlsplit(url).hostname in LOCAL:
            route.continue_()
        else:
            outside.append(url)
            route.abort()

    page.route("**/*", only_local)
    open_app(page, app_url, query)
    shut = page.locator("details:not([open]) > summary")  # the settings and the replay, made when opened
    while shut.count():
        shut.first.click()
    page.locator("details[data-disclosure=clock] select").first.wait_for(timeout=15_000)
    for title in list(TABS.values())[1:]:
        page.get_by_role("tab", name=title).click()
        page.wait_for_function("Bokeh.documents[0].is_idle", polling=100, timeout=30_000)
        page.wait_for_timeout(300)
    assert outside == []
