"""Page helpers: open a deep link and wait until Bokeh has rendered it."""

from __future__ import annotations

from urllib.parse import parse_qs

from app.page.frame import TABS
from core import TrafficConfig, compute_metrics, generate, simulate
from core.measure.losses import losses
from core.measure.metrics import latency_so_far

from .pixels import read_timeline

READY_JS = "window.Bokeh && Bokeh.documents.length > 0 && Bokeh.documents[0].is_idle"


def open_app(page, url: str, query: str = "", canvas: bool = True) -> None:
    """Navigate to the app (with an optional query string) and wait for the document and, if `canvas`, a canvas.

    A tab without plots (?tab=quiz) has no visible canvas: pass canvas=False and wait for what it shows instead.
    """
    page.goto(url + query)
    page.wait_for_function(READY_JS, polling=100, timeout=30_000)
    if not canvas:  # the app arrives after the page's first render: wait for its tab bar at least
        page.locator(".bv-tab").first.wait_for(state="attached", timeout=30_000)
        return
    tab = (parse_qs(query.lstrip("?")).get("tab") or ["simulator"])[0]
    if tab not in TABS or tab == "simulator":  # the widget has drawn its timelines (app/web/renderer.js)
        page.wait_for_function("window.__bvPaints > 0", polling=50, timeout=30_000)
    elif tab in ("knee", "spread", "temperature"):  # the exercises' figures: SVG drawn in the browser (chart.js)
        page.locator("svg.bv-chart").first.wait_for(state="attached", timeout=30_000)
    else:  # a Bokeh plot on another tab
        page.locator(".bk-Canvas").first.wait_for(timeout=30_000)


def wait_for_timeline(page, expected: list[str], slots: int, window: int = 64) -> None:
    """Wait up to 5 s until the timeline read from the pixels equals `expected` (the server may still be sending)."""
    page.wait_for_function("Bokeh.documents[0].is_idle", polling=100)
    for _ in range(50):
        if read_timeline(page, slots, window) == expected:
            return
        page.wait_for_timeout(100)
    assert read_timeline(page, slots, window) == expected


def core_run(mode: str, slots: int, seed: int):
    """Return the core's run for the app's default traffic at this seed."""
    return simulate(generate(TrafficConfig(seed=seed)), slots, mode)


def core_metrics(mode: str, slots: int, seed: int, window: int = 64):
    """Return the core's metrics over the app's window."""
    return compute_metrics(core_run(mode, slots, seed), window)


def open_full_head_to_head(page) -> None:
    """Open the full head-to-head's disclosure (shut when the page opens), as a learner does to read its rows."""
    page.locator(".bv-h2h-details").first.evaluate("d => { d.open = true; }")


def text_of(page, selector: str) -> str:
    """Return the text of the first element matching a (shadow-piercing) selector."""
    return page.locator(selector).first.inner_text().strip()


def assert_numbers_match_core(page, mode: str, slots: int, seed: int) -> None:
    """Assert the live stats show the mode's core metrics and the head-to-head table both modes', as formatted."""
    m = core_metrics(mode, slots, seed)
    assert text_of(page, "[data-stat=completed]") == f"{m.completed}/{m.requests}"
    assert text_of(page, "[data-stat=useful_tokens]") == str(m.useful_tokens)
    assert text_of(page, "[data-stat=utilisation]") == f"{m.utilisation:.0%}"
    run = core_run(mode, slots, seed)  # the card: every request arrived by the cursor (step 63), to now or its finish
    assert text_of(page, "[data-stat=avg_latency]") == f"{latency_so_far(run.arrival, run.finish, 64):.1f}"
    open_full_head_to_head(page)
    for policy in ("static", "continuous"):
        pm = core_metrics(policy, slots, seed)
        # The first screen's table: the chapter's average (the completed only) beside every request's
        assert text_of(page, f"[data-h2h={policy}-avg_latency_completed]") == f"{pm.avg_latency:.1f}"
        assert text_of(page, f"[data-h2h={policy}-completed]") == f"{pm.completed}/{pm.requests}"
        assert text_of(page, f"[data-h2h={policy}-utilisation]") == f"{pm.utilisation:.0%}"
        assert text_of(page, f"[data-h2h={policy}-avg_latency]") == f"{pm.avg_latency:.1f}"
        assert text_of(page, f"[data-h2h={policy}-avg_latency_all]") == f"{pm.avg_latency_all:.1f}"
        assert text_of(page, f"[data-h2h={policy}-drain]") == str(pm.drain_steps)
        loss = losses(core_run(policy, slots, seed), 64)
        for key in ("padding", "idle_while_waiting", "boundary_wait"):
            assert text_of(page, f"[data-h2h={policy}-{key}]") == str(getattr(loss, key))


# What an SVG chart (app/web/charts/chart.js) drew, read from its geometry: each drawn series' points and each vertical
# mark, in data units. The axes' own ticks invert the scales (log where the chart says so), so a wrong scale, a
# misplaced point or a mark on the wrong batch reads back wrong.
CHART_JS = """(id) => {
  const deep = (root, sel) => {  // the served page draws it inside a component's shadow root
    const hit = root.querySelector(sel);
    if (hit) return hit;
    for (const el of root.querySelectorAll("*")) {
      const found = el.shadowRoot && deep(el.shadowRoot, sel);
      if (found) return found;
    }
    return null;
  };
  const svg = deep(document, `svg[data-chart="${id}"]`);
  if (!svg) return null;
  const ticks = (attr, coord) => [...svg.querySelectorAll(`line[${attr}]`)]
    .map((l) => [Number(l.getAttribute(attr)), Number(l.getAttribute(coord))]);
  const invert = (pairs, log) => {
    const f = log ? Math.log10 : (v) => v, g = log ? (v) => 10 ** v : (v) => v;
    const [[v0, p0], [v1, p1]] = [pairs[0], pairs[pairs.length - 1]];
    return (p) => g(f(v0) + (p - p0) * (f(v1) - f(v0)) / (p1 - p0));
  };
  const x = invert(ticks("data-tick-x", "x1"), svg.dataset.logX === "1");
  const y = invert(ticks("data-tick-y", "y1"), svg.dataset.logY === "1");
  const series = {}, vlines = {};
  for (const line of svg.querySelectorAll("polyline[data-series]")) {
    series[line.dataset.series] = line.getAttribute("points").split(" ")
      .map((xy) => xy.split(",").map(Number)).map(([a, b]) => [x(a), y(b)]);
  }
  for (const line of svg.querySelectorAll("line[data-vline]")) {
    vlines[line.dataset.vline] = x(Number(line.getAttribute("x1")));
  }
  const dots = {};
  for (const g of svg.querySelectorAll("g[data-dots]")) {
    dots[g.dataset.dots] = [...g.children].map((m) => [x(Number(m.dataset.cx)), y(Number(m.dataset.cy))]);
  }
  return { series, vlines, dots };
}"""
