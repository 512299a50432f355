"""The timeline read back from the screenshot equals the core's timeline, cell for cell; numbers equal its metrics."""

import pytest
from playwright.sync_api import expect

from .helpers import assert_numbers_match_core, core_run, open_app
from .pixels import read_timeline

SETTINGS = [
    ("continuous", 4, 4),
    ("static", 4, 4),
    ("static", 1, 7),
    ("continuous", 1, 7),
    ("continuous", 16, 3),
    ("static", 16, 11),
    ("static", 6, 2),
]


@pytest.mark.parametrize("mode,slots,seed", SETTINGS)
def test_pixels_equal_the_core_timeline(page, page_errors, app_url, artifacts, mode, slots, seed):
    """Every cell's colour maps back to the core's state for that (mode, slots, seed)."""
    open_app(page, app_url, f"?mode={mode}&slots={slots}&seed={seed}")
    drawn = read_timeline(page, slots, 64)
    page.screenshot(path=artifacts / f"timeline-{mode}-{slots}-{seed}.png", full_page=True)
    assert drawn == core_run(mode, slots, seed).timeline_strings(64)


def test_one_slot_is_identical_in_both_modes(page, page_errors, app_url):
    """The 'try slots = 1' moment: both modes draw the very same picture."""
    open_app(page, app_url, "?mode=static&slots=1&seed=4")
    static = read_timeline(page, 1, 64)
    open_app(page, app_url, "?mode=continuous&slots=1&seed=4")
    assert read_timeline(page, 1, 64) == static


@pytest.mark.parametrize("mode,slots,seed", [("continuous", 4, 4), ("static", 4, 4), ("static", 9, 5)])
def test_numbers_equal_the_core_metrics(page, page_errors, app_url, mode, slots, seed):
    """Live stats show the mode's metrics; the head-to-head table shows both modes' metrics."""
    open_app(page, app_url, f"?mode={mode}&slots={slots}&seed={seed}")
    assert_numbers_match_core(page, mode, slots, seed)
    expect(page.locator(".bv-step").first).to_have_text("step 63")  # the window's last pass: stats = head-to-head
