"""`batchviz export`: one self-contained HTML page (Bokeh inlined, every run precomputed) that works from file://."""

from __future__ import annotations

import json
import re
from pathlib import Path

from bokeh.document import Document
from bokeh.embed import file_html
from bokeh.layouts import column, row
from bokeh.models import Button, ColumnDataSource, CustomJS, Div, RadioButtonGroup, Slider, TabPanel, Tabs
from bokeh.resources import INLINE

from core import TrafficConfig, compute_metrics, generate, simulate
from core import worked_example as worked
from core.limits import check_writable
from core.losses import losses

from . import palette
from .export_exercises import knee_section, spread_section, temperature_section
from .plots import MIN_LABEL_CELLS, ROW_PX, head_to_head_data, head_to_head_figure, timeline_figure
from .progress import progress_table
from .style import CSS
from .views import h2h_rows

JS_PATH = Path(__file__).resolve().parent.parent / "assets" / "export.js"
MODES = ("continuous", "static")
SLOTS = range(1, 17)
SEEDS = range(0, 100)
PLAY_INTERVAL_MS = 120
SCRIPT_BODY = re.compile(r"(<script\b[^>]*>).*?(</script>)", re.DOTALL | re.IGNORECASE)
LINKED_SCRIPT = re.compile(r"<script\b[^>]*\bsrc=", re.IGNORECASE)
EXTERNAL = re.compile(r"<(?:script|link|img|iframe)\b[^>]*\b(?:src|href)=[^>]*>", re.IGNORECASE)

TAB_KEYS = ("simulator", "knee", "spread", "temperature")  # ?tab= on the file URL, as on the served page
TAB_JS = """
const k = keys.indexOf(new URLSearchParams(window.location.search).get("tab"));
if (k > 0) tabs.active = k;
"""

PLAY_JS = """
const stop = () => { clearInterval(window.__bvTimer); window.__bvTimer = null; play.label = "▶ Play"; };
if (window.__bvTimer) { stop(); return; }
if (step.value >= step.end) step.value = 0;
play.label = "❚❚ Pause";
window.__bvTimer = setInterval(() => { if (step.value >= step.end) stop(); else step.value += 1; }, interval);
"""


def _flat(run) -> list[int]:
    return [int(v) for a in (run.start, run.finish, run.slot, run.release) for v in a]


def h2h_cells(static, continuous, window: int) -> tuple[list, list]:
    """Return the head-to-head's (key, label) rows and their (static, continuous) cells, as the served page has them."""
    rows = h2h_rows(
        compute_metrics(static, window),
        compute_metrics(continuous, window),
        losses(static, window),
        losses(continuous, window),
    )
    return [[key, label] for key, label, _s, _c in rows], [[s, c] for _key, _label, s, c in rows]


def precompute(config: TrafficConfig, window: int = 64) -> dict:
    """Return every (mode, slots, seed) run on `config`'s traffic as flat [start…, finish…, slot…, release…] lists.

    The head-to-head's cells come along, formatted by the served page's own `h2h_rows`: the script only places them.
    """
    traffic, runs, h2h, labels = [], {mode: [[] for _ in SLOTS] for mode in MODES}, [[] for _ in SLOTS], []
    for seed in SEEDS:
        requests = generate(TrafficConfig(**{**vars(config), "seed": seed}))
        traffic.append({"ids": [r.id for r in requests], "arrival": [r.arrival for r in requests]})
        for k, slots in enumerate(SLOTS):
            pair = {mode: simulate(requests, slots, mode) for mode in MODES}
            for mode in MODES:
                runs[mode][k].append(_flat(pair[mode]))
            labels, cells = h2h_cells(pair["static"], pair["continuous"], window)
            h2h[k].append(cells)
    return {"traffic": traffic, "runs": runs, "h2h": h2h, "h2h_rows": labels, "worked": precompute_worked(window)}


def precompute_worked(window: int = 64) -> dict:
    """Return the worked example's runs for every (mode, slots), static with the example's batch timeout."""
    requests = worked.worked_example()
    runs, h2h, labels = {mode: [] for mode in MODES}, [], []
    for slots in SLOTS:
        pair = {
            mode: simulate(requests, slots, mode, worked.BATCH_TIMEOUT if mode == "static" else 0) for mode in MODES
        }
        for mode in MODES:
            runs[mode].append(_flat(pair[mode]))
        labels, cells = h2h_cells(pair["static"], pair["continuous"], window)
        h2h.append(cells)
    traffic = {"ids": [r.id for r in requests], "arrival": [r.arrival for r in requests]}
    return {"traffic": traffic, "runs": runs, "h2h": h2h, "h2h_rows": labels}


def build_page(config: TrafficConfig | None = None, window: int = 64, title: str = "batchviz") -> str:
    """Return the static page's HTML: the simulator's controls, timeline, stats and head-to-head, no server."""
    config = config or TrafficConfig()
    requests = generate(config)
    first = simulate(requests, 4, "continuous")
    first_static = simulate(requests, 4, "static")
    data = {
        **precompute(config, window),
        "window": window,
        "row_px": ROW_PX,
        "min_label_cells": MIN_LABEL_CELLS,
        "captions": palette.CAPTIONS,
        "colors": {"static": palette.STATIC_COLOR, "continuous": palette.CONTINUOUS_COLOR},
    }
    plot = timeline_figure(first, window, window, name="timeline")
    texts = progress_table(first, window)

    def div(text: str = "", **kw) -> Div:
        return Div(text=text, stylesheets=[CSS], **kw)

    mode = RadioButtonGroup(labels=list(MODES), active=0, name="mode")
    traffic = RadioButtonGroup(labels=["Generated traffic", "Worked example (A-F)"], active=0, name="traffic")
    slots = Slider(title="Batch slots", start=1, end=16, value=4, step=1, name="slots", width=280)
    seed = Slider(title="Traffic seed", start=0, end=99, value=config.seed, step=1, name="seed", width=280)
    last = window - 1  # step t is the pass at the cursor, as on the served page
    step = Slider(title="Step", start=0, end=last, value=last, step=1, name="step", width=280)
    play = Button(label="▶ Play", name="play", width=90)
    nxt = Button(label="Step ▸", name="next", width=90)
    reset = Button(label="Reset", name="reset", width=90)
    readout, stats = div(texts["readout"][last], name="readout"), div(texts["stats"][last], name="stats")
    waste, log = div(texts["waste"][last], name="waste"), div(texts["log"][last], name="log")
    caption = div(palette.CAPTIONS["continuous"], name="caption", sizing_mode="stretch_width")
    table = div(name="h2h-table")
    bar_source = ColumnDataSource(
        head_to_head_data(compute_metrics(first_static, window), compute_metrics(first, window))
    )
    redraw = CustomJS(
        args={
            "data_json": json.dumps(data, separators=(",", ":")),
            "mode_group": mode,
            "traffic_group": traffic,
            "slots_slider": slots,
            "seed_slider": seed,
            "step_slider": step,
            "gen_source": plot.sources["generating"],
            "pad_source": plot.sources["padding"],
            "idle_source": plot.sources["idle"],
            "fig": plot.figure,
            "yaxis": plot.figure.yaxis[0],
            "curtain": plot.curtain,
            "cursor": plot.cursor,
            "readout": readout,
            "stats": stats,
            "waste": waste,
            "log": log,
            "caption": caption,
            "table": table,
            "bar_source": bar_source,
        },
        code=JS_PATH.read_text(encoding="utf-8"),
    )
    mode.js_on_change("active", redraw)
    traffic.js_on_change("active", redraw)
    for slider in (slots, seed, step):
        slider.js_on_change("value", redraw)
    play.js_on_click(CustomJS(args={"play": play, "step": step, "interval": PLAY_INTERVAL_MS}, code=PLAY_JS))
    nxt.js_on_click(CustomJS(args={"step": step}, code="step.value = Math.min(step.end, step.value + 1);"))
    reset.js_on_click(CustomJS(args={"step": step}, code="step.value = 0;"))
    sections = (
        ("Exercise 1: the knee", knee_section()),
        ("Exercise 2: length spread", spread_section()),
        ("Exercise 3: one temperature", temperature_section()),
    )
    exercise_panels = [TabPanel(title=title, child=section) for title, (section, _) in sections]
    exercise_redraws = [script for _, (_, script) in sections]
    layout = column(
        div(
            f"<h1>Static vs continuous batching</h1><p>Each row is a batch slot, each column one forward pass. "
            f"{len(requests)} requests per seed; every setting was computed in advance, so this page "
            "needs no server.</p>",
            css_classes=["bv-header"],
            sizing_mode="stretch_width",
        ),
        Tabs(
            tabs=[
                TabPanel(
                    title="Simulator",
                    child=row(
                        column(mode, traffic, slots, seed, step, row(play, nxt, reset), width=310),
                        column(
                            readout,
                            stats,
                            caption,
                            plot.figure,
                            div(palette.legend_html(), sizing_mode="stretch_width"),
                            waste,
                            log,
                            div("<h3>Head to head</h3>"),
                            table,
                            head_to_head_figure(bar_source),
                            sizing_mode="stretch_width",
                        ),
                        sizing_mode="stretch_width",
                    ),
                ),
                *exercise_panels,
            ],
            name="tabs",
            sizing_mode="stretch_width",
        ),
        sizing_mode="stretch_width",
    )
    doc = Document()
    doc.add_root(layout)
    # The scripts fill their views on load too, so the first view and every later one share one path.
    for script in (redraw, *exercise_redraws):
        doc.js_on_event("document_ready", script)
    doc.js_on_event("document_ready", CustomJS(args={"tabs": layout.children[1], "keys": list(TAB_KEYS)}, code=TAB_JS))
    page = drop_linked_scripts(file_html(doc, INLINE, title))
    # Look at the markup only: the inlined Bokeh bundle mentions URLs in code paths this page never takes.
    linked = EXTERNAL.findall(SCRIPT_BODY.sub(r"\1\2", page))
    if linked:
        # A file:// page cannot fetch these; fail here rather than ship a page that breaks offline.
        raise RuntimeError(f"the page would load external resources: {linked}")
    return page


def drop_linked_scripts(page: str) -> str:
    """Remove `<script src=…></script>` elements, which a file:// page cannot load."""
    # Bokeh lists every registered extension's scripts (Panel's, once Panel is imported) though this page
    # uses only Bokeh's own models, which are inlined.
    return SCRIPT_BODY.sub(lambda m: "" if LINKED_SCRIPT.match(m.group(1)) else m.group(0), page)


def export_page(path: str | Path, config: TrafficConfig | None = None, window: int = 64) -> Path:
    """Write the static page to `path` and return it; a place that cannot be written raises OSError before building."""
    check_writable(path)
    path = Path(path)
    path.write_text(build_page(config, window, title="batchviz: static vs continuous batching"), encoding="utf-8")
    return path
