"""Golden images of the whole page guard the layout, with a tolerance; `./dev goldens` regenerates them."""

from pathlib import Path

import numpy as np
import pytest
from PIL import Image
from playwright.sync_api import expect

from .helpers import open_app

GOLDENS = Path(__file__).parent / "goldens"
# A pixel "differs" when any channel moves by more than this; the page may differ in this share of pixels.
CHANNEL_TOLERANCE = 40
MAX_DIFFERING_SHARE = 0.01

OPENING = ("opening-1280", 1280, 900, "")  # the page as it opens, no address: the README's image
LAYOUTS = [
    OPENING,
    ("default-1280", 1280, 900, "?mode=continuous&slots=4&seed=4"),
    ("static-narrow-800", 800, 1000, "?mode=static&slots=4&seed=4"),
    ("phone-390", 390, 844, "?mode=continuous&slots=4&seed=4"),  # a phone: no sideways scroll, labels whole
    ("dark-1280", 1280, 900, "?theme=dark&mode=continuous&slots=6&seed=4&step=40"),
    ("knee-1280", 1280, 900, "?tab=knee&guess=64"),  # a guess given, so the knee and its labels show
    ("spread-1280", 1280, 900, "?tab=spread&sigma=0.8"),
    ("temperature-1280", 1280, 900, "?tab=temperature&bug=1"),
]


@pytest.mark.parametrize("name,width,height,query", LAYOUTS)
def test_page_matches_its_golden(page, page_errors, app_url, artifacts, request, name, width, height, query):
    """The page at a fixed viewport matches its golden image within the tolerance."""
    page.set_viewport_size({"width": width, "height": height})
    open_app(page, app_url, query)
    expect(page.locator("[data-computing]")).to_have_count(0, timeout=30_000)  # the knee's sweep, off the loop
    page.wait_for_timeout(500)  # let web fonts and late layout settle
    shot = artifacts / f"golden-{name}.png"
    page.screenshot(path=shot)
    golden = GOLDENS / f"{name}.png"
    if request.config.getoption("--update-goldens"):
        golden.write_bytes(shot.read_bytes())
    assert golden.exists(), f"no golden {golden.name}: run ./dev goldens"
    now = np.asarray(Image.open(shot).convert("RGB")).astype(int)
    want = np.asarray(Image.open(golden).convert("RGB")).astype(int)
    assert now.shape == want.shape
    differing = (np.abs(now - want).max(axis=2) > CHANNEL_TOLERANCE).mean()
    assert differing <= MAX_DIFFERING_SHARE, f"{differing:.2%} of pixels differ from {golden.name}"
