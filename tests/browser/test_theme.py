"""The dark theme: dark page and figures, readable text, the same state colours, and a message for a bad theme."""

import io

import numpy as np
from PIL import Image
from playwright.sync_api import expect

from app.page.palette import THEMES

from .helpers import core_run, open_app
from .pixels import read_timeline

DARK = THEMES["dark"]

LUMINANCE_JS = """(selector) => {
  const find = (root) => { const hit = root.querySelector(selector); if (hit) return hit;
    for (const el of root.querySelectorAll('*')) if (el.shadowRoot) { const h = find(el.shadowRoot); if (h) return h; }
    return null; };
  const el = selector === 'body' ? document.body : find(document);
  const style = getComputedStyle(el);
  const [r, g, b] = (selector === 'body' ? style.backgroundColor : style.color).match(/\\d+/g).map(Number);
  return (0.2126 * r + 0.7152 * g + 0.0722 * b) / 255;
}"""

CORNER_JS = """(name) => {
  const rect = window.__bvWidget.timelines[name === "timeline" ? 0 : 1].canvas.getBoundingClientRect();
  return [rect.left + 3, rect.bottom - 3];
}"""


def test_dark_theme_draws_the_same_states_on_a_dark_page(page, page_errors, app_url):
    """?theme=dark: dark page and figure, light labels; cells read back as the core's, the curtain as the background."""
    open_app(page, app_url, "?theme=dark&mode=static&slots=4&seed=4&step=20")
    assert page.evaluate(LUMINANCE_JS, "body") < 0.15
    assert page.evaluate(LUMINANCE_JS, ".bv-stat-label") > 0.6
    x, y = page.evaluate(CORNER_JS, "timeline")
    image = np.asarray(Image.open(io.BytesIO(page.screenshot())).convert("RGB")).astype(int)
    corner = image[int(y), int(x)]
    assert np.abs(corner - [int(DARK.background[i : i + 2], 16) for i in (1, 3, 5)]).max() <= 4, corner
    full = core_run("static", 4, 4).timeline_strings(64)
    assert read_timeline(page, 4, 64, curtain=DARK.background) == [row[:21] + "-" * 43 for row in full]


def test_bad_theme_says_what_is_allowed(page, page_errors, app_url):
    """?theme=neon falls back to light and says so."""
    open_app(page, app_url, "?theme=neon")
    # The message pane may paint a moment after the first canvas: wait for it rather than read it at once.
    message = page.locator(".bv-message").first
    expect(message).to_contain_text("theme='neon' is not allowed (use light or dark); using light.")
    assert page.evaluate(LUMINANCE_JS, ".bv-stat-label") < 0.5  # dark text: the light theme
