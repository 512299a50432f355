"""The chapter's worked example on the page: one click or ?preset=worked draws the core's schedules of A-F."""

import re

from playwright.sync_api import expect

from core import simulate
from core.chapter.worked_example import BATCH_TIMEOUT, SLOTS, WINDOW, worked_example

from .helpers import open_app, wait_for_timeline


def _expected(mode: str) -> list[str]:
    timeout = BATCH_TIMEOUT if mode == "static" else 0
    return simulate(worked_example(), SLOTS, mode, timeout).timeline_strings(WINDOW)


def test_the_deep_link_draws_both_modes_of_the_worked_example(page, page_errors, app_url):
    """?preset=worked&mode=static: static's 22-step schedule with its padding; continuous after one click."""
    open_app(page, app_url, "?preset=worked&mode=static")
    wait_for_timeline(page, _expected("static"), SLOTS, WINDOW)
    page.get_by_role("radio", name="continuous").click()
    wait_for_timeline(page, _expected("continuous"), SLOTS, WINDOW)
    expect(page).to_have_url(re.compile(r"preset=worked"), timeout=15_000)
    expect(page.locator("[data-stat=completed]").first).to_have_text("6/6")


def test_the_button_loads_the_worked_example(page, page_errors, app_url):
    """From the default page, the sidebar's button shows A-F on 4 slots, and "Use generated traffic" appears."""
    open_app(page, app_url, "?mode=continuous&slots=6&seed=4")
    page.get_by_role("button", name="The chapter's worked example (A-F)").click()
    wait_for_timeline(page, _expected("continuous"), SLOTS, WINDOW)
    expect(page.get_by_role("button", name="Use generated traffic")).to_be_visible()
