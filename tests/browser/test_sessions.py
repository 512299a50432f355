"""Two learners on one server: runs are shared, settings and uploads are not."""

from __future__ import annotations

from playwright.sync_api import expect

from core import TrafficConfig, generate, simulate
from core.chapter.chapter_traffic import chapter_traffic
from core.workload.traces import parse_trace

from .helpers import open_app, wait_for_timeline
from .pixels import read_timeline

VIEWPORT = {"width": 1280, "height": 900}
TRACE = "id,arrival,output_tokens\nx,0,5\ny,0,2\nz,1,9\nw,4,3\n"


def test_a_learners_upload_and_settings_never_reach_another_page(browser, app_url):
    """A uploads a trace and picks static; B, open beside it, keeps the chapter's traffic, then moves its own seed.

    Neither page ever shows the other's traffic or settings, and a third page opens on the default.
    """
    a, b = browser.new_page(viewport=VIEWPORT), browser.new_page(viewport=VIEWPORT)
    try:
        open_app(a, app_url)
        open_app(b, app_url)
        a.locator("input[type=file]").first.set_input_files(
            {"name": "mine.csv", "mimeType": "text/csv", "buffer": TRACE.encode()}
        )
        a.get_by_role("radio", name="static").click()
        trace = parse_trace(TRACE)
        wait_for_timeline(a, simulate(trace, 4, "static").timeline_strings(64), 4)
        expect(a.locator(".bv-traffic").first).to_contain_text("mine.csv")

        chapter = simulate(chapter_traffic(), 4, "continuous").timeline_strings(64)
        assert read_timeline(b, 4, 64) == chapter
        expect(b.locator(".bv-traffic").first).not_to_contain_text("mine.csv")
        seed = b.locator("input[name=seed]")
        seed.focus()
        seed.press("ArrowRight")  # B's own move: generated traffic at its seed, in B's own mode
        moved = simulate(generate(TrafficConfig(seed=5)), 4, "continuous").timeline_strings(64)
        wait_for_timeline(b, moved, 4)
        expect(b.locator("[data-mode=continuous]").first).to_have_attribute("aria-checked", "true")

        assert read_timeline(a, 4, 64) == simulate(trace, 4, "static").timeline_strings(64)  # A's is untouched
        third = browser.new_page(viewport=VIEWPORT)
        open_app(third, app_url)
        assert read_timeline(third, 4, 64) == chapter
        expect(third.locator(".bv-traffic").first).not_to_contain_text("mine.csv")
        third.close()
    finally:
        a.close()
        b.close()
