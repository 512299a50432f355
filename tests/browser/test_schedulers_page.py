"""The Schedulers tab in Chromium: each scheduler drawn as the core ran it, guess first, the table and lessons."""

import io
import re

import numpy as np
import pytest
from PIL import Image
from playwright.sync_api import expect

from app.page import palette
from app.schedulers.data import LineupKey, drawn_cells, shared_lineup
from app.schedulers.words import ROWS, lessons_html, shown_best
from core.clock.hardware import cost_model
from core.measure.lineup import parse_entries
from core.states import GENERATING, PAUSED

from .helpers import open_app
from .pixels import nearest_state

COLOURS = {"G": palette.GENERATING_COLOR, "Z": palette.PAUSED_COLOR, ".": palette.IDLE_COLOR}
POINTS_JS = """(points) => points.map(([k, x, slot]) => window.__bvLineup.timelines[k][0].pagePoint(x, slot))"""


def open_lineup(page, url: str, query: str) -> None:
    """Open the tab and wait until every timeline is drawn."""
    open_app(page, url, "?tab=schedulers" + query, canvas=False)
    page.wait_for_function("window.__bvLineup && window.__bvLineup.timelines.length > 1", timeout=30_000)
    page.wait_for_timeout(300)


def _samples(lines):
    """Points to read on each timeline, with the state the core says is there.

    Inside the widest paused passes (above their dots), in the widest stretch of each generating bar between two
    pauses, and after a slot's last request (idle).
    """
    end_ms = max(line.run.drain_ms for line in lines)
    out = []
    for k, line in enumerate(lines):
        run = line.run
        starts, ends = run.pass_start_ms, run.pass_end_ms
        cells = drawn_cells(run.schedule.cells).tolist()
        paused = [(c[1], starts[c[2]], ends[c[3] - 1]) for c in cells if c[4] == PAUSED]
        for slot, a, b in sorted(paused, key=lambda c: c[1] - c[2])[:3]:
            out.append((k, (a + b) / 2, slot + 0.2, "Z"))
        for _, slot, lo, hi, state in cells[:40]:
            if state != GENERATING:
                continue
            edges = [starts[lo]] + sorted(x for s_, a, b in paused if s_ == slot for x in (a, b)) + [ends[hi - 1]]
            gaps = [(b - a, a, b) for a, b in zip(edges[::2], edges[1::2]) if starts[lo] <= a < b <= ends[hi - 1]]
            width, a, b = max(gaps, default=(0, 0, 0))
            if width > 0.01 * end_ms:
                out.append((k, (a + b) / 2, slot + 0.5, "G"))
        last = max(range(int(run.slot.max()) + 1), key=lambda s: -run.finish_ms[run.slot == s].max())  # rows used
        out.append((k, (run.finish_ms[run.slot == last].max() + end_ms) / 2, last + 0.5, "."))
    return out


def test_each_scheduler_is_drawn_as_the_core_ran_it(page, page_errors, app_url):
    """TGI's paused passes, its generating bars and the idle slots after the drain, read from the pixels."""
    open_lineup(page, app_url, "&schedulers=tgi,sglang")
    lines = shared_lineup(LineupKey(parse_entries("tgi,sglang")))
    samples = _samples(lines)
    assert {s[3] for s in samples} == {"Z", "G", "."}
    page.evaluate("window.scrollTo(0, 0)")
    points = page.evaluate(POINTS_JS, [[k, x, y] for k, x, y, _ in samples])
    image = np.asarray(Image.open(io.BytesIO(page.screenshot(full_page=True))).convert("RGB")).astype(float)
    seen = [nearest_state(image[int(round(y)), int(round(x))], COLOURS) for x, y in points]
    assert seen == [s[3] for s in samples]
    titles = page.evaluate("window.__bvLineup.timelines.map(([t]) => t.canvas.getAttribute('aria-label'))")
    # TGI has no request cap: it draws the rows it used, as many as it ran at once; SGLang the tab's 8.
    used = int(lines[0].run.slot.max()) + 1
    assert titles[0].startswith(f"TGI (no request cap): {used} slots") and titles[1].startswith("SGLang: 8 slots")
    assert used > 8


def test_the_guess_comes_first_then_the_table_marks_the_cores_best(page, page_errors, app_url):
    open_lineup(page, app_url, "")
    expect(page.locator("[data-lineup-guess=ask]")).to_be_visible()
    assert page.locator(".bv-lineup-table").count() == 0
    page.get_by_role("button", name="SGLang", exact=True).click()
    table = page.locator(".bv-lineup-table")
    expect(table).to_be_visible(timeout=15_000)
    lines = shared_lineup(LineupKey(parse_entries("vllm,tgi,sglang,trtllm-no-evict")))
    for field, _words, fmt in ROWS:
        marked = table.locator(f"tr[data-row={field}] td[data-best='1']")
        cols = {int(marked.nth(i).get_attribute("data-col")) for i in range(marked.count())}
        assert cols == shown_best(lines, field, fmt), field
    assert "You picked SGLang" in page.locator(".bv-lineup-guess").inner_text()
    assert "s_guess=2" in page.url


@pytest.mark.parametrize("lesson", ["TensorRT-LLM on a tight pool: no-evict against max-util"])
def test_a_lesson_loads_its_settings_and_its_sentence_is_the_cores(page, page_errors, app_url, lesson):
    open_lineup(page, app_url, "")
    page.get_by_role("button", name=lesson).click()
    page.wait_for_function("window.__bvLineup.view.order.join() === 'trtllm-no-evict,trtllm-max-util'", timeout=15_000)
    page.get_by_role("button", name="TensorRT-LLM max-util", exact=True).click()
    claim = page.locator("[data-claim=trtllm]")
    expect(claim).to_be_visible(timeout=15_000)
    key = LineupKey(parse_entries("trtllm-no-evict,trtllm-max-util"), kv_blocks=300)
    lesson = re.search(r'<p data-claim="trtllm">.*?</p>', lessons_html(shared_lineup(key), cost_model())).group(0)
    expected = re.sub(r"<[^>]+>", "", lesson)  # the lesson's sentence (a note on the fairness star may follow)
    assert claim.inner_text().strip() == expected.strip()
    assert "schedulers=trtllm-no-evict,trtllm-max-util" in page.url and "s_kv=300" in page.url


# Every letter the renderer drew, checked on its own canvas: inside its bar and its row, and its glyphs' pixels still
# the labels' white over whatever lies under them (a paused sliver or an outline drawn over a letter darkens some).
LABELS_JS = """(k) => {
  const t = window.__bvLineup.timelines[k][0], c = t.canvas, W = c.width, H = c.height, dpr = W / c.clientWidth;
  const img = c.getContext("2d").getImageData(0, 0, W, H).data;
  const m = document.createElement("canvas");
  m.width = W; m.height = H;
  const g = m.getContext("2d");
  g.setTransform(dpr, 0, 0, dpr, 0, 0);
  Object.assign(g, { font: t.labelFont, textBaseline: "top", textAlign: "left", fillStyle: "#000" });
  const outside = [];
  for (const [text, left, right, top, slot, i] of t.drawnLabels) {
    g.fillText(text, left, top);
    const bar = t.geom.gen.find(([lo, hi, s, r]) => s === slot && r === i && t.px(lo) <= left && right < t.px(hi));
    if (!bar || top < t.py(slot) || top + parseFloat(t.labelFont) > t.py(slot + 1)) outside.push(text);
  }
  const mask = g.getImageData(0, 0, W, H).data;
  let ink = 0, covered = 0;
  for (let p = 3; p < mask.length; p += 4) {
    if (mask[p] < 192) continue;  // a glyph's pixel, at least three quarters ink: on any bar, at least 191 a channel
    ink++;
    if (Math.min(img[p - 3], img[p - 2], img[p - 1]) < 170) covered++;
  }
  return { labels: t.drawnLabels.length, outside, ink, covered };
}"""


@pytest.mark.parametrize("width", [1280, 390])
def test_no_letter_is_covered_or_cut(page, page_errors, app_url, width):
    """Issue 47, item 2: paused slivers covered letters on TGI's and SGLang's bars, and TGI's letters were cut.

    Each letter lies inside its bar and its row, and all its glyphs' pixels are the labels' white, on every timeline,
    after a redraw too (the axes left the text centred, so a repainted letter sat half over its bar's left edge).
    """
    page.set_viewport_size({"width": width, "height": 900})
    open_lineup(page, app_url, "&schedulers=tgi:prefill_chunking=0,sglang,tgi")
    page.evaluate("window.dispatchEvent(new Event('resize'))")
    box = page.locator(".bv-lineup canvas").first.bounding_box()
    page.mouse.move(box["x"] + 90, box["y"] + 50)  # a hover repaints every timeline, one request outlined
    page.wait_for_timeout(300)
    for k in range(3):
        found = page.evaluate(LABELS_JS, k)
        assert found["labels"] > 0 and found["outside"] == [], (k, found)
        assert found["ink"] > 0 and found["covered"] == 0, (k, found)


def test_a_guess_changes_the_address_by_the_tabs_own_keys_only(page, page_errors, app_url):
    """Issue 47, item 3: a guess wrote `mode=continuous&slots=4`, the simulator's defaults, into the address."""
    open_lineup(page, app_url, "")
    page.get_by_role("button", name="SGLang", exact=True).click()
    expect(page).to_have_url(re.compile(r"[?&]s_guess=2"), timeout=15_000)
    keys = {part.split("=")[0] for part in page.url.split("?", 1)[1].split("&")}
    assert keys == {"tab", "s_guess"}, page.url


# The table's headers a phone cuts: past its frame's edges, wider than their own cells, or a word broken over lines
# (a setting's name may break after an underscore, as the page allows).
CUT_HEADERS_JS = """(t) => { const box = t.parentElement.getBoundingClientRect(), out = [];
  for (const h of t.querySelectorAll("th")) {
    const r = h.getBoundingClientRect();
    if (r.left < box.left - 1 || r.right > box.right + 1 || h.scrollWidth > h.clientWidth + 1) out.push(h.textContent);
    for (const node of h.childNodes) {
      if (node.nodeType !== Node.TEXT_NODE) continue;
      for (const m of node.textContent.matchAll(/[^\\s-]+-?/g)) {
        const range = document.createRange();
        range.setStart(node, m.index);
        range.setEnd(node, m.index + m[0].length);
        if (new Set([...range.getClientRects()].map((q) => Math.round(q.top))).size > 1) out.push(m[0]);
      }
    }
  }
  return out; }"""
RATIO = "tgi:prefill_chunking=0,tgi:prefill_chunking=0%3Bwaiting_served_ratio=1.2"  # the lesson's pair (%3B: ;)
LONG_NAMES = f"{RATIO},vllm:scheduling_policy=priority,sglang"


@pytest.mark.parametrize("query", ["", f"&schedulers={RATIO}", "&schedulers=vllm,vllm:scheduling_policy=priority"])
def test_on_a_phone_every_header_of_the_table_is_readable(page, page_errors, app_url, query):
    """Issue 47, item 4: at 390 px the table's last column header lay past its frame's edge, cut.

    The default lineup and the lessons' fit whole, no word broken; four long settings' names scroll in their frame.
    """
    page.set_viewport_size({"width": 390, "height": 844})
    open_lineup(page, app_url, query + "&s_guess=0")
    table = page.locator(".bv-lineup-table")
    expect(table).to_be_visible(timeout=15_000)
    assert table.evaluate(CUT_HEADERS_JS) == []
    open_lineup(page, app_url, f"&schedulers={LONG_NAMES}&s_guess=0")
    frame = page.locator(".bv-lineup-table").evaluate(
        "(t) => [t.parentElement.scrollWidth, t.parentElement.clientWidth, getComputedStyle(t.parentElement).overflowX]"
    )
    assert frame[0] <= frame[1] or frame[2] == "auto"
