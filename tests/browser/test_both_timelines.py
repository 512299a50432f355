"""Both modes on one time axis: one playback cursor for both, and hovering a request highlights it in both."""

from playwright.sync_api import expect

from .helpers import core_run, open_app
from .pixels import outlined, read_timeline, shown_height, timeline_point


def test_both_timelines_share_the_cursor(page, page_errors, app_url):
    """At step 30 the shown mode and the other mode are each revealed through step 30, on the same axis."""
    open_app(page, app_url, "?mode=static&slots=6&seed=2&step=30")
    static, continuous = core_run("static", 6, 2), core_run("continuous", 6, 2)
    assert read_timeline(page, 6, 64) == [row[:31] + "-" * 33 for row in static.timeline_strings(64)]
    assert read_timeline(page, 6, 64, name="timeline-other") == [
        row[:31] + "-" * 33 for row in continuous.timeline_strings(64)
    ]
    page.get_by_role("button", name="Step ▸").first.click()
    expect(page.locator(".bv-step").first).to_have_text("step 31")
    assert read_timeline(page, 6, 64, name="timeline-other") == [
        row[:32] + "-" * 32 for row in continuous.timeline_strings(64)
    ]


def test_hovering_a_request_highlights_it_in_both(page, page_errors, app_url):
    """Mouse over request F in the continuous timeline: F is outlined in both timelines, then cleared."""
    open_app(page, app_url, "?mode=continuous&slots=4&seed=4")
    run = core_run("continuous", 4, 4)
    i = next(k for k, r in enumerate(run.requests) if r.id == "F")
    x, y = timeline_point(page, "timeline", float(run.start[i]) + 2.5, float(run.slot[i]) + 0.5)
    page.mouse.move(x, y)
    page.wait_for_timeout(200)  # let the hover callback run before reading the selections
    assert outlined(page, "timeline") == ["F"]
    assert outlined(page, "timeline-other") == ["F"]
    page.mouse.move(5, 5)
    page.wait_for_timeout(200)
    x, y = timeline_point(page, "timeline", 0.5, 3.5)  # an idle cell: no request under the mouse
    page.mouse.move(x, y)
    page.wait_for_timeout(200)
    assert outlined(page, "timeline") == []
    assert outlined(page, "timeline-other") == []


def test_both_off_hides_the_other_timeline(page, page_errors, app_url):
    """?both=0 shows one timeline; a bad value says what is allowed and keeps both."""
    open_app(page, app_url, "?mode=static&slots=4&seed=4&both=0")
    assert shown_height(page, "timeline") > 0
    assert shown_height(page, "timeline-other") == 0
    open_app(page, app_url, "?both=maybe")
    # The message pane may paint a moment after the first canvas: wait for it rather than read it at once.
    expect(page.locator(".bv-message").first).to_contain_text("both='maybe' is not allowed (use 1 or 0); kept 1")
    assert shown_height(page, "timeline-other") > 0
