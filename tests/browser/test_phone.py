"""On a phone (390 px): no sideways scroll, every tab and player button on screen, the timeline in its own frame."""

import pytest

from app.simulator import TABS

from .helpers import open_app

# Boxes of every tab and every button, through the shadow roots, and the page's own scroll width.
BOXES_JS = """() => { const out = { tabs: [], buttons: [] };
  const walk = (root) => { for (const el of root.querySelectorAll('*')) {
    const r = el.getBoundingClientRect();
    if (el.classList.contains('bk-tab')) out.tabs.push([el.textContent.trim(), r.left, r.right, r.width]);
    if (el.tagName === 'BUTTON' && r.width > 0 && el.closest('.bv-player, .bv-modes, .bk-btn-group') !== null)
      out.buttons.push([el.textContent.trim(), r.left, r.right]);
    if (el.shadowRoot) walk(el.shadowRoot); } };
  walk(document);
  out.scroll = document.documentElement.scrollWidth;
  return out; }"""


@pytest.mark.parametrize("query", ["", "?tab=quiz", "?tab=spread", "?tab=knee", "?tab=temperature", "?tab=memory"])
def test_phone_page_has_no_sideways_scroll_and_every_tab_on_screen(page, page_errors, app_url, query):
    """At 390x844 the page is no wider than the screen and every tab title lies wholly inside it."""
    page.set_viewport_size({"width": 390, "height": 844})
    open_app(page, app_url, query, canvas=query in ("", "?tab=spread", "?tab=knee"))
    page.wait_for_timeout(500)
    boxes = page.evaluate(BOXES_JS)
    assert boxes["scroll"] <= 390
    assert [t[0] for t in boxes["tabs"]] == list(TABS.values())
    for title, left, right, width in boxes["tabs"]:
        assert width > 0 and left >= 0 and right <= 390, (title, left, right)


def test_phone_player_buttons_are_on_screen(page, page_errors, app_url):
    """The mode buttons and the five player buttons are each wholly on a 390 px screen."""
    page.set_viewport_size({"width": 390, "height": 844})
    open_app(page, app_url)
    boxes = page.evaluate(BOXES_JS)
    names = [b[0] for b in boxes["buttons"]]
    for name in ("continuous", "static", "« Start", "◂ Back", "▶ Play", "Step ▸", "End »"):
        assert name in names
    for name, left, right in boxes["buttons"]:
        assert left >= 0 and right <= 390, (name, left, right)
