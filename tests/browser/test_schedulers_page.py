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
    expected = re.sub(r"<[^>]+>", "", lessons_html(shared_lineup(key), cost_model()))
    assert claim.inner_text().strip() == expected.strip()
    assert "schedulers=trtllm-no-evict,trtllm-max-util" in page.url and "s_kv=300" in page.url
