"""On a phone (390 px): no sideways scroll, every tab and player button on screen, the timeline in its own frame."""

import pytest

from app.page.frame import TABS

from .helpers import open_app

# Boxes of every tab and every button, through the shadow roots, and the page's own scroll width.
BOXES_JS = """() => { const out = { tabs: [], buttons: [] };
  const walk = (root) => { for (const el of root.querySelectorAll('*')) {
    const r = el.getBoundingClientRect();
    if (el.classList.contains('bv-tab')) out.tabs.push([el.textContent.trim(), r.left, r.right, r.width]);
    if (el.tagName === 'BUTTON' && r.width > 0 && el.closest('.bv-player, .bv-modes, .bk-btn-group') !== null)
      out.buttons.push([el.textContent.trim(), r.left, r.right]);
    if (el.shadowRoot) walk(el.shadowRoot); } };
  walk(document);
  out.scroll = document.documentElement.scrollWidth;
  return out; }"""


@pytest.mark.parametrize(
    "query", ["", "?tab=quiz", "?tab=spread", "?tab=knee", "?tab=temperature", "?tab=memory", "?tab=schedulers"]
)
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


# Elements past the right edge of the screen that no sideways-scrolling frame holds (through the shadow roots).
LOOSE_JS = """(w) => { const out = [];
  const framed = (el) => { for (let e = el; e; e = e.parentElement || (e.getRootNode() && e.getRootNode().host)) {
      const x = getComputedStyle(e).overflowX; if (x === 'auto' || x === 'scroll') return true; } return false; };
  const walk = (root) => { for (const el of root.querySelectorAll('*')) {
    const r = el.getBoundingClientRect();
    if (r.width > 0 && r.right > w + 1 && !framed(el) && !el.className.toString().startsWith('bk-GlyphRenderer'))
      out.push([el.tagName, el.className.toString().slice(0, 40), Math.round(r.right),
                (el.textContent || '').trim().slice(0, 40)]);
    if (el.shadowRoot) walk(el.shadowRoot); } };
  walk(document);
  return { scroll: document.documentElement.scrollWidth, loose: out.slice(0, 10) }; }"""


@pytest.mark.parametrize(
    "width,query",
    [
        (1280, "?preset=worked"),
        (800, "?preset=worked"),
        (390, ""),
        (390, "?tab=knee&guess=64"),
        (390, "?tab=memory"),
        (800, "?tab=schedulers&s_guess=0"),
        (390, "?tab=schedulers&s_guess=0"),
    ],
)
def test_nothing_runs_off_the_screen_at_1280_800_and_390(page, page_errors, app_url, width, query):
    """Wide things sit in frames of their own that scroll; nothing else passes the screen's edge.

    The sentences-true issue, item 9: a slider ran off at 1280 (the page 1,290 px wide), the knee's table made a
    phone scroll sideways, the loop's notes and the memory table's last column sat off screen.
    """
    page.set_viewport_size({"width": width, "height": 900})
    open_app(page, app_url, query, canvas=query in ("", "?preset=worked"))
    page.wait_for_timeout(800)
    found = page.evaluate(LOOSE_JS, width)
    assert found["scroll"] <= width and found["loose"] == [], found


def test_the_worked_example_leaves_your_own_trace_shut():
    """Item 9: `?preset=worked` opened the "Your own trace" card by itself; only an upload opens it."""
    from app.shell import App

    app = App(query={"preset": "worked"})
    assert "trace" not in app.chapter_widget.opened
    assert "clock" in App(query={"clock": "ms"}).chapter_widget.opened  # a deep link's setting opens its own


def test_the_lit_loops_lines_never_wrap_on_a_phone(page, page_errors, app_url):
    """At 390 px each line of the lit loop stays one line (its box scrolls sideways): no comment's '#' left alone.

    A learner's read (issue 47): the loop's comments wrapped at 390 px, leaving a lone "#" on a line.
    """
    page.set_viewport_size({"width": 390, "height": 844})
    open_app(page, app_url, "?mode=continuous&slots=4&seed=4")
    heights = page.eval_on_selector_all(  # a line's code (its note, where it has one, goes under it on a phone)
        ".bv-loop-box .bv-code-line .bv-code",
        "els => els.map(e => [e.getBoundingClientRect().height, e.textContent])",
    )
    assert len(heights) >= 4 and any("#" in text for _, text in heights)
    one_line = min(h for h, _ in heights)
    assert all(h < 1.5 * one_line for h, _ in heights), heights
