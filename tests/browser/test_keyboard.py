"""The chapter's Try-it from the keyboard alone: Tab to the mode, Space, Tab to slots, ArrowLeft to 1, Play."""

from playwright.sync_api import expect

from app.page.frame import TABS
from core import simulate
from core.chapter.chapter_traffic import chapter_traffic

from .helpers import open_app, wait_for_timeline
from .pixels import read_timeline
from .test_accessibility import FOCUSED_JS


def chapter(mode: str, slots: int) -> list[str]:
    """Return the core's timeline of the chapter's traffic (the page's default) over the 64-step window."""
    return simulate(chapter_traffic(), slots, mode).timeline_strings(64)


def tab_to(page, want, most: int) -> list[dict]:
    """Press Tab until `want(focused)` holds, at most `most` times; return every stop (the last one is wanted)."""
    stops = []
    for _ in range(most):
        page.keyboard.press("Tab")
        stops.append(page.evaluate(FOCUSED_JS))
        if stops[-1] and want(stops[-1]):
            return stops
    raise AssertionError(f"not reached in {most} Tabs: {[s and (s['label'] or s['text']) for s in stops]}")


def step_of(page) -> int:
    """Return the step the playback readout shows."""
    return int(page.locator(".bv-step").first.get_attribute("data-step"))


def test_try_it_from_the_keyboard(page, page_errors, app_url):
    """The tab bar comes first (one stop, arrows move along it); then static, 1 slot and Play, from the keyboard.

    Each draws the core's timeline.
    """
    open_app(page, app_url)
    page.evaluate("window.__bvAgentScan && window.__bvAgentScan()")
    assert read_timeline(page, 4, 64) == chapter("continuous", 4)

    page.keyboard.press("Tab")
    assert page.evaluate(FOCUSED_JS)["text"] == TABS["simulator"]  # the tab bar is the first stop
    page.keyboard.press("ArrowRight")  # the next tab opens, and holds the focus
    expect(page.get_by_role("tab", name=TABS["knee"])).to_have_attribute("aria-selected", "true")
    assert page.evaluate(FOCUSED_JS)["text"] == TABS["knee"]
    page.keyboard.press("ArrowLeft")
    expect(page.get_by_role("tab", name=TABS["simulator"])).to_have_attribute("aria-selected", "true")
    stops = tab_to(page, lambda f: f["text"] == "static", most=3)
    assert [s["text"] for s in stops] == ["continuous", "static"]  # the tab bar is one stop: then the modes
    page.keyboard.press("Space")
    wait_for_timeline(page, chapter("static", 4), 4)

    tab_to(page, lambda f: f["label"] == "Batch slots", most=4)  # past the other modes (sjf, priority)
    for _ in range(3):
        page.keyboard.press("ArrowLeft")
    slider = page.get_by_role("slider", name="Batch slots", exact=True)
    expect(slider).to_have_value("1")
    wait_for_timeline(page, chapter("static", 1), 1)
    assert chapter("static", 1) == chapter("continuous", 1)  # the chapter's point: one slot, one picture

    tab_to(page, lambda f: f["text"] == "▶ Play", most=5)
    page.keyboard.press("Enter")  # at the window's end, Play starts again from step 0
    expect(page.get_by_role("button", name="❚❚ Pause")).to_be_visible()
    # The relabelled button keeps the keyboard focus (it is given back a moment after the re-render).
    page.wait_for_function(f"(({FOCUSED_JS})() || {{}}).text === '❚❚ Pause'", polling=100, timeout=5_000)
    page.keyboard.press("Enter")  # focus stays on the button: Enter pauses
    expect(page.get_by_role("button", name="▶ Play")).to_be_visible()
    page.wait_for_function("Bokeh.documents[0].is_idle", polling=100)
    page.wait_for_timeout(300)
    step = step_of(page)
    assert 0 <= step < 63
    full = chapter("static", 1)
    assert read_timeline(page, 1, 64) == [row[: step + 1] + "-" * (63 - step) for row in full]
    page.keyboard.press("Enter")  # on again, to the end, where it stops by itself
    expect(page.locator(".bv-step").first).to_have_attribute("data-step", "63", timeout=20_000)
    expect(page.get_by_role("button", name="▶ Play")).to_be_visible()
    wait_for_timeline(page, full, 1)
