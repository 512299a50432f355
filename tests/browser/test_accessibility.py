"""axe-core, a real accessibility engine, on every view: no serious or critical violation; focus rings and labels."""

from __future__ import annotations

from collections import Counter

import pytest
from axe_playwright_python.sync_playwright import Axe
from playwright.sync_api import expect

from app.page.palette import THEMES
from app.quiz.view import QUESTIONS

from .helpers import open_app

VIEWS = [  # (name, query, what the view shows once built: text, a css= selector, or "" for its first canvas)
    ("simulator", "", ""),
    ("knee", "?tab=knee", ""),
    ("spread", "?tab=spread", ""),
    ("temperature", "?tab=temperature", "Run it on both samplers"),
    ("memory", "?tab=memory", "css=.bv-mem-mode"),
    ("quiz", "?tab=quiz", "Check my answer"),
    ("schedulers", "?tab=schedulers&s_guess=0", "css=.bv-lineup-table"),
    ("worked", "?preset=worked", ""),
    ("dark", "?theme=dark", ""),
    ("clock", "?clock=ms", ""),
]
WITH_SETTINGS = ("simulator", "dark", "clock")  # their disclosure cards are opened, so the settings are checked too
BLOCKING = ("serious", "critical")
# "region" (content outside landmarks) is a moderate best-practice rule that walks every node: left out for time.
AXE_OPTIONS = {"resultTypes": ["violations"], "rules": {"region": {"enabled": False}}}
OPEN_CARDS_JS = """() => { for (const m of Bokeh.documents[0].all_models)
  if (m.properties.collapsed !== undefined && m.collapsed) m.collapsed = false; }"""

# The element that has the keyboard focus, through every shadow root, and how its focus ring is drawn.
FOCUSED_JS = """() => {
  let a = document.activeElement;
  while (a && a.shadowRoot && a.shadowRoot.activeElement) a = a.shadowRoot.activeElement;
  if (!a || a === document.body) return null;
  const s = getComputedStyle(a), r = a.getBoundingClientRect();
  return { tag: a.tagName, cls: String(a.className), text: (a.textContent || '').trim().slice(0, 40),
           label: a.getAttribute('aria-label') || '', style: s.outlineStyle, width: parseFloat(s.outlineWidth),
           color: s.outlineColor, visible: r.width > 0 && r.height > 0 };
}"""


def serious_violations(page) -> Counter:
    """Return axe's serious and critical violations on the page, counted by rule id (one count per node)."""
    page.evaluate("window.__bvAgentScan && window.__bvAgentScan()")  # the page agent labels what is there now
    results = Axe().run(page, options=AXE_OPTIONS).response
    return Counter(
        {v["id"]: len(v["nodes"]) for v in results["violations"] if v.get("impact") in BLOCKING and v["nodes"]}
    )


def open_settings(page) -> None:
    """Open every disclosure card on the simulator, so the settings inside them are checked too."""
    page.evaluate(OPEN_CARDS_JS)
    shut = page.locator("details:not([open]) > summary")  # the simulator's own disclosures, made when opened
    while shut.count():
        shut.first.click()
    page.locator("details[data-disclosure=clock] select").first.wait_for(timeout=15_000)
    page.wait_for_function("Bokeh.documents[0].is_idle", polling=100)
    page.wait_for_timeout(300)


def open_view(page, url: str, query: str, ready: str) -> None:
    """Open a view and wait until it is built: its first canvas, or `ready` (text or css=) where it draws none."""
    open_app(page, url, query, canvas=not ready)
    if ready:
        target = page.locator(ready) if ready.startswith("css=") else page.get_by_text(ready)
        target.first.wait_for(timeout=30_000)
    page.wait_for_timeout(300)  # late panes (messages, the quiz's body) paint after the document is idle


@pytest.mark.parametrize("name,query,ready", VIEWS, ids=[v[0] for v in VIEWS])
def test_view_has_no_serious_axe_violation(page, page_errors, app_url, name, query, ready):
    """axe-core finds no serious or critical violation on the view (settings opened on the simulator's views)."""
    open_view(page, app_url, query, ready)
    if name in WITH_SETTINGS:
        open_settings(page)
    assert serious_violations(page) == Counter()


@pytest.mark.parametrize("theme", ["light", "dark"])
def test_quiz_verdicts_pass_axe(page, page_errors, app_url, theme):
    """A right and a wrong answer's verdicts ("Right.", "Not quite.") and the result list pass axe, contrast too."""
    open_view(page, app_url, f"?tab=quiz&theme={theme}", "Check my answer")
    first, second = QUESTIONS[0], QUESTIONS[1]
    page.get_by_label(first.options[first.answer], exact=True).check()
    page.get_by_role("button", name="Check my answer").click()
    expect(page.locator(".bv-verdict[data-verdict=right]").first).to_be_visible()
    assert serious_violations(page) == Counter()
    page.get_by_role("button", name="Next question").click()
    wrong = next(i for i in range(len(second.options)) if i != second.answer)
    page.get_by_label(second.options[wrong], exact=True).check()
    page.get_by_role("button", name="Check my answer").click()
    expect(page.locator(".bv-verdict[data-verdict=wrong]").first).to_be_visible()
    assert serious_violations(page) == Counter()


def _rgb(css: str) -> tuple[float, ...]:
    if css.startswith("#"):
        return tuple(int(css[i : i + 2], 16) for i in (1, 3, 5))
    return tuple(float(v) for v in css[css.index("(") + 1 : css.index(")")].split(",")[:3])


def contrast(a: str, b: str) -> float:
    """Return the WCAG contrast ratio of two CSS colours (#rrggbb or rgb(...))."""

    def lum(css: str) -> float:
        c = [v / 255 for v in _rgb(css)]
        c = [v / 12.92 if v <= 0.03928 else ((v + 0.055) / 1.055) ** 2.4 for v in c]
        return 0.2126 * c[0] + 0.7152 * c[1] + 0.0722 * c[2]

    hi, lo = sorted((lum(a), lum(b)), reverse=True)
    return (hi + 0.05) / (lo + 0.05)


@pytest.mark.parametrize("theme,page_colour", [("light", "#FFFFFF"), ("dark", "#121212")])
def test_every_control_on_the_first_screen_shows_a_focus_ring(page, page_errors, app_url, theme, page_colour):
    """Tab through the first 20 stops: each focused control draws a solid ring >= 2 px, >= 3:1 against the page."""
    open_app(page, app_url, f"?theme={theme}")
    page.evaluate("window.__bvAgentScan && window.__bvAgentScan()")
    seen = []
    for _ in range(20):
        page.keyboard.press("Tab")
        focused = page.evaluate(FOCUSED_JS)
        assert focused is not None and focused["visible"], f"focus lost after {seen}"
        seen.append(focused["label"] or focused["text"] or focused["cls"])
        assert focused["style"] != "none" and focused["width"] >= 2, focused
        assert contrast(focused["color"], page_colour) >= 3, focused
    assert THEMES[theme].focus in {THEMES["light"].focus, THEMES["dark"].focus}
    assert len(set(seen)) >= 10  # the walk moved through distinct controls, not one trap


def test_every_slider_handle_is_named_by_its_title(page, page_errors, app_url):
    """Each slider's handle has its slider's title as its accessible name (a screen reader says what it moves)."""
    open_app(page, app_url)
    open_settings(page)
    for name in ("Batch slots", "Traffic seed", "Step", "Requests", "Static batch timeout (steps)"):
        handle = page.get_by_role("slider", name=name, exact=True)
        expect(handle).to_have_count(1)


def test_clicking_a_checkbox_label_toggles_it(page, page_errors, app_url):
    """A click on the words "Show both modes..." flips the box and the second timeline; a second click flips back."""
    open_app(page, app_url)
    open_settings(page)
    box = page.get_by_role("checkbox", name="Show both modes on one time axis")
    words = page.get_by_text("Show both modes on one time axis", exact=True)
    other_shown = "!window.__bvWidget.timelines[1].canvas.hidden"
    before = box.is_checked()
    assert page.evaluate(other_shown) == before
    for state in (not before, before):
        words.click()
        if state:
            expect(box).to_be_checked()
        else:
            expect(box).not_to_be_checked()
        page.wait_for_function(f"{other_shown} === {str(state).lower()}", polling=100, timeout=10_000)


def _lab(css: str) -> tuple[float, float, float]:
    """Return a colour in CIE L*a*b* (D65), where distance approximates how different two colours look."""
    c = [v / 255 for v in _rgb(css)]
    c = [v / 12.92 if v <= 0.04045 else ((v + 0.055) / 1.055) ** 2.4 for v in c]
    x = (0.4124 * c[0] + 0.3576 * c[1] + 0.1805 * c[2]) / 0.95047
    y = 0.2126 * c[0] + 0.7152 * c[1] + 0.0722 * c[2]
    z = (0.0193 * c[0] + 0.1192 * c[1] + 0.9505 * c[2]) / 1.08883
    f = [t ** (1 / 3) if t > 0.008856 else 7.787 * t + 16 / 116 for t in (x, y, z)]
    return 116 * f[1] - 16, 500 * (f[0] - f[1]), 200 * (f[1] - f[2])


def test_one_colour_means_one_thing():
    """The modes' colours are none of the timeline's state colours, and look clearly different from each."""
    from app.page import palette

    states = [colour for _words, colour in palette.LEGEND.values()] + [palette.PADDING_HATCH]
    for mode in (palette.STATIC_COLOR, palette.CONTINUOUS_COLOR):
        for state in states:
            delta_e = sum((a - b) ** 2 for a, b in zip(_lab(mode), _lab(state))) ** 0.5
            assert delta_e > 40, (mode, state, delta_e)  # the old static vermillion was 33 from padding's orange


@pytest.mark.parametrize("theme,page_colour", [("light", "#FFFFFF"), ("dark", "#121212")])
def test_theme_text_colours_read_on_the_page(theme, page_colour):
    """Links and the quiz's verdicts are at least 4.5:1 on the page; the focus ring at least 3:1."""
    t = THEMES[theme]
    for colour in (t.link, t.right, t.wrong, t.muted, t.text):
        assert contrast(colour, page_colour) >= 4.5, colour
    assert contrast(t.focus, page_colour) >= 3
