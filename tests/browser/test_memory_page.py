"""The memory tab in Chromium: every cell, pool box and sentence read back from the page equals the core's runs."""

from playwright.sync_api import expect

from core.chapter.memory_example import BLOCK_SIZE, MODES, SLOTS, memory_requests
from core.kv.memory import MemoryConfig
from core.sched.engine import as_run, schedule

from .helpers import open_app

STATES = {"gen": "G", "pad": "P", "idle": ".", "rec": "R", "pre": "F"}
# Each mode's timeline as strings, read from the table's cell classes.
GRID_JS = """(mode) => {
  const find = (root, selector) => {  // Panel renders each pane in a shadow root
    const hit = root.querySelector(selector);
    if (hit) return hit;
    for (const el of root.querySelectorAll("*")) {
      if (el.shadowRoot) { const h = find(el.shadowRoot, selector); if (h) return h; }
    }
    return null;
  };
  const table = find(document, `table[data-mode="${mode}"]`);
  const pool = find(document, `[data-pool="${mode}"]`);
  const log = find(document, `[data-mem-log="${mode}"]`);
  if (!table || !pool) return null;
  const rows = [];
  for (const tr of table.querySelectorAll("tr")) {
    const th = tr.querySelector("th");
    if (th && th.textContent.startsWith("slot")) {
      rows.push(Array.from(tr.querySelectorAll("td")).map((td) => td.className.split(" ")[0]));
    }
  }
  const boxes = Array.from(pool.querySelectorAll("span")).map((s) => s.className + ":" + s.textContent);
  return {rows, pool: boxes, log: log ? log.innerText : ""};
}"""


def _core(blocks: int):
    reqs = memory_requests()
    return {
        mode: schedule(
            reqs,
            SLOTS,
            policy,
            MemoryConfig(kv_blocks=blocks, block_size=BLOCK_SIZE, allocation=alloc),
            record_pool=True,
        )
        for mode, (policy, alloc) in MODES.items()
    }


def _read(page, mode: str):
    for _ in range(100):
        got = page.evaluate(GRID_JS, mode)
        if got and got["rows"]:
            return got
        page.wait_for_timeout(100)
    raise AssertionError(f"no {mode} table on the page")


def _assert_page_is_core(page, blocks: int, step: int) -> None:
    core = _core(blocks)
    width = max(as_run(s).drain for s in core.values()) + 1  # the last column: every mode done
    for mode, s in core.items():
        want = as_run(s).timeline_strings(width)
        for _ in range(50):  # the server may still be sending the redraw
            got = _read(page, mode)
            rows = ["".join(STATES[c] for c in row) for row in got["rows"]]
            passes = [p for p, start in enumerate(s.pass_start.tolist()) if int(start) == step]
            owners = s.pool_maps[passes[0]] if passes else (-1,) * blocks
            pool = [f"held:{s.requests[o].id}" if o >= 0 else "free:" for o in owners]
            if rows == want and got["pool"] == pool:
                break
            page.wait_for_timeout(100)
        assert rows == want, mode
        assert got["pool"] == pool, mode


def test_the_memory_tab_draws_the_cores_runs_and_pool(page, page_errors, app_url):
    """?tab=memory: the three timelines and the pool at the cursor are the core's; Step moves the pool on."""
    open_app(page, app_url, "?tab=memory", canvas=False)
    expect(page.get_by_text("Memory decides who runs")).to_be_visible(timeout=30_000)
    _assert_page_is_core(page, 12, 0)
    for _ in range(3):
        page.get_by_role("button", name="Step ▸").click()
    _assert_page_is_core(page, 12, 3)
    text = page.locator("[data-claim=memory-gap]").first.inner_text()
    drains = {m: as_run(s).drain for m, s in _core(12).items()}
    assert f"paged finishes {drains['contiguous'] - drains['paged']} steps before contiguous" in text


def test_a_deep_link_opens_a_tight_pool_where_paged_preempts(page, page_errors, app_url):
    """?tab=memory&blocks=9: paged preempts; stepping to it, the page's log says who needed a block and who left."""
    open_app(page, app_url, "?tab=memory&blocks=9", canvas=False)
    expect(page.get_by_text("Memory decides who runs")).to_be_visible(timeout=30_000)
    _assert_page_is_core(page, 9, 0)
    paged = _core(9)["paged"]
    event = next(e for e in paged.events if e.kind == "preempt")
    step = int(paged.pass_start[event.step])
    for _ in range(step):
        page.get_by_role("button", name="Step ▸").click()
    _assert_page_is_core(page, 9, step)
    names = [r.id for r in paged.requests]
    log = _read(page, "paged")["log"]
    assert f"{names[event.needed_by]} needs a new block and none is free; {names[event.request]}, admitted last" in log
    expect(page.locator("[data-claim=memory-paged]").first).to_contain_text("preempts once")
    assert "blocks=9" in page.url


def test_the_budget_choice_redraws_the_huge_prompt_lesson(page, page_errors, app_url):
    """Choosing 1,024 tokens: the claim states that budget's chunk count, the strip has that many prompt passes."""
    from app.memory.view import STRIP_MS
    from core.chapter.chunked_example import huge_prompt_runs

    open_app(page, app_url, "?tab=memory", canvas=False)
    page.get_by_role("button", name="1,024", exact=True).click()
    s = huge_prompt_runs(1024)["chunked"]
    big = len(s.requests) - 1
    chunks = int(s.first_pass[big] - s.start_pass[big]) + 1
    expect(page.locator("[data-claim=chunk-budget]").first).to_contain_text(f"over {chunks} passes", timeout=15_000)
    inside = [
        p
        for p in range(int(s.start_pass[big]), int(s.first_pass[big]) + 1)
        if s.pass_end[p] > STRIP_MS[0] and s.pass_start[p] < STRIP_MS[1]
    ]
    strip = page.locator("[data-strip=chunked] span.pre")
    expect(strip).to_have_count(len(inside))
    assert "budget=1024" in page.url
