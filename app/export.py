"""`batchviz export`: the served page's teaching as one self-contained HTML page that works from file://.

The chapter's widget is assets/renderer.js, the served page's own renderer, mounted by an export host
(assets/export_glue.js) whose views come from a table the core computed here: the chapter's traffic, generated traffic
at seeds 0-99, the worked example and the story's lessons, each at slots 1-16. The story, the loop at the cursor,
the head-to-head and the quiz come from the same Python strings and questions as the served page; the exercises are
their precomputed Bokeh sections. Nothing is fetched: the page checks that it links no external resource.
"""

from __future__ import annotations

import html
import json
import re
from dataclasses import replace
from pathlib import Path
from urllib.parse import parse_qs

from bokeh.document import Document
from bokeh.embed import components
from bokeh.embed.bundle import bundle_for_objs_and_resources
from bokeh.models import InlineStyleSheet
from bokeh.resources import INLINE

from core import TrafficConfig, compute_metrics, generate, simulate
from core import worked_example as worked
from core.chapter_traffic import SLOTS as CHAPTER_SLOTS
from core.chapter_traffic import chapter_traffic
from core.limits import check_writable
from core.losses import losses
from core.policies import CHAPTER_PAIR, get_policy
from core.traffic import LENGTH_KINDS

from . import chapter, palette, story
from .export_exercises import knee_section, spread_section, temperature_section
from .export_lineup import export_lineups, lineup_panel
from .plots import H2H_GROUPS, MIN_LABEL_CELLS
from .quiz import INTRO as QUIZ_INTRO
from .quiz import questions_data
from .state import MODE_ORDER
from .style import CSS
from .views import _h2h_table, _latency, h2h_rows
from .widget import RENDERER_JS
from .widget_data import policy_fields, renderer_config

ASSETS = Path(__file__).resolve().parent.parent / "assets"
GLUE_JS = ASSETS / "export_glue.js"
QUIZ_JS = ASSETS / "quiz.js"
LINEUP_JS = ASSETS / "export_lineup.js"
MODES = MODE_ORDER  # every mode the widget offers
SLOTS = range(1, 17)
SEEDS = range(0, 100)
PLAY_INTERVAL_MS = 16  # one frame (the served page plays at a learner's 120 ms, app/widget.py INTERVAL_MS)
SCRIPT_BODY = re.compile(r"(<script\b[^>]*>).*?(</script>)", re.DOTALL | re.IGNORECASE)
LINKED_SCRIPT = re.compile(r"<script\b[^>]*\bsrc=", re.IGNORECASE)
EXTERNAL = re.compile(r"<(?:script|link|img|iframe)\b[^>]*\b(?:src|href)=[^>]*>", re.IGNORECASE)
IN_APP_LINK = re.compile(r'<a href="(\?[^"]*)">(.*?)</a>', re.DOTALL)

# ?tab= on the file URL, as on the served page (app/simulator.py TABS, less the Memory tab, which needs its engine;
# the Schedulers tab carries its default lineup and its lessons', app/export_lineup.py).
TABS = {
    "simulator": "Simulator",
    "knee": "Exercise 1: the knee",
    "spread": "Exercise 2: length spread",
    "temperature": "Exercise 3: one temperature",
    "schedulers": "Schedulers",
    "quiz": "Check yourself",
}
# The URL keys the page's links and its own address may carry (app/url.py URL_KEYS, as far as the table reaches).
LINK_KEYS = {"tab", "preset", "mode", "slots", "seed", "step", "lengths", "arrival_window"}
COMPLETED_ONLY = '<span data-h2h="{policy}-avg_latency">{latency}</span> <span class="bv-of">of {completed}</span>'
TRAFFIC_BUTTONS = (
    ("chapter", "The chapter's traffic (12 requests)"),
    ("generated", "Generated traffic"),
    ("worked", "The chapter's worked example (A-F)"),
)

# The page around the renderer's widget: plain HTML tabs, the traffic choice, the head-to-head bars.
EXPORT_CSS = """
body { margin: 0; padding: 8px 12px 24px; color: #222; background: #fff; }
.bv-app { max-width: 1280px; margin: 0 auto; }
.bv-app, .bv-app * { box-sizing: border-box; }
.bv-header { margin: 4px 0 8px; }
[role=tabpanel]:focus-visible, .bv-tabs [role=tab]:focus-visible, .bv-app button:focus-visible,
.bv-app input:focus-visible, .bv-app a:focus-visible, .bv-app [tabindex]:focus-visible {
  outline: 3px solid var(--bv-focus, #0072B2); outline-offset: 2px; }
.bv-exercise { overflow-x: auto; overflow-y: hidden; }
.bv-choices { display: flex; flex-wrap: wrap; gap: 6px; margin: 8px 0; }
.bv-choices button, .bv-quiz button { font: inherit; font-size: 0.9rem; padding: 5px 12px; border: 1px solid #888;
  border-radius: 4px; background: #f4f4f4; color: inherit; cursor: pointer; min-height: 32px; }
.bv-choices button[aria-pressed=true] { background: #0072B2; border-color: #0072B2; color: #fff; font-weight: 600; }
.bv-quiz button.bv-primary { background: #0072B2; border-color: #0072B2; color: #fff; }
.bv-quiz button.bv-quiz-link { border: none; background: transparent; color: var(--bv-link, #0072B2);
  text-decoration: underline; padding-left: 0; }
.bv-quiz { max-width: 760px; }
.bv-quiz-options { display: flex; flex-direction: column; gap: 0.35rem; margin: 0.3rem 0 0.6rem; }
.bv-quiz-options label { display: flex; align-items: flex-start; gap: 0.5rem; line-height: 1.35;
  overflow-wrap: anywhere; }
.bv-quiz-options input { flex: none; margin-top: 0.2rem; }
.bv-quiz-nav { display: flex; gap: 8px; margin-top: 8px; }
.bv-served-only { color: var(--bv-muted, #555); }
"""


def _flat(run) -> list[int]:
    return [int(v) for a in (run.start, run.finish, run.slot, run.release) for v in a]


def _traffic(requests) -> dict:
    return {
        "ids": [r.id for r in requests],
        "arrival": [r.arrival for r in requests],
        "prompt": [r.prompt_tokens for r in requests],
        "output": [r.output_tokens for r in requests],
        "priority": [r.priority for r in requests],
    }


def h2h_cells(static, continuous, window: int) -> str:
    """Return the head-to-head's cells as the served page's `h2h_rows` formats them, '|'-joined, static first."""
    # The completed-only row keeps just its latency: the page rebuilds the cell from COMPLETED_ONLY, checked here
    # to equal what h2h_rows writes, so the table stays compact and cannot drift from the served one.
    ms, mc = compute_metrics(static, window), compute_metrics(continuous, window)
    rows = h2h_rows(ms, mc, losses(static, window), losses(continuous, window))
    cells = []
    for key, _label, s, c in rows:
        if key is None:
            pair = []
            for policy, m, cell in (("static", ms, s), ("continuous", mc, c)):
                latency = _latency(m.avg_latency)
                if cell != COMPLETED_ONLY.format(policy=policy, latency=latency, completed=m.completed):
                    raise RuntimeError("app/views.py's completed-only cell changed: update COMPLETED_ONLY")
                pair.append(latency)
            s, c = pair
        cells += [s, c]
    if any("|" in cell for cell in cells):
        raise RuntimeError("a head-to-head cell holds '|', the page's separator")
    return "|".join(cells)


def h2h_template(requests: int, window: int) -> dict:
    """Return the full head-to-head table for `requests` requests with each cell a {{k}} placeholder, and its keys."""
    probe = simulate(generate(TrafficConfig(requests=requests)), 1, "static")
    m, loss = compute_metrics(probe, window), losses(probe, window)
    rows = h2h_rows(m, m, loss, loss)
    shaped = [(key, label, f"{{{{{2 * k}}}}}", f"{{{{{2 * k + 1}}}}}") for k, (key, label, _s, _c) in enumerate(rows)]
    return {"html": _h2h_table(shaped), "keys": [key for key, *_ in rows]}


def precompute(config: TrafficConfig, window: int = 64) -> dict:
    """Return every (mode, slots, seed) run on `config`'s traffic as flat [start…, finish…, slot…, release…] lists."""
    # Each seed's requests are stored once (`traffic`); the head-to-head's cells come along per (slots, seed).
    traffic, runs, h2h = [], {mode: [[] for _ in SLOTS] for mode in MODES}, [[] for _ in SLOTS]
    for seed in SEEDS:
        requests = generate(replace(config, seed=seed))
        traffic.append(_traffic(requests))
        for k, slots in enumerate(SLOTS):
            pair = {mode: simulate(requests, slots, mode) for mode in MODES}
            for mode in MODES:
                runs[mode][k].append(_flat(pair[mode]))
            h2h[k].append(h2h_cells(pair["static"], pair["continuous"], window))
    return {"traffic": traffic, "runs": runs, "h2h": h2h, "window": window, "requests": config.requests}


def precompute_fixed(requests, window: int, timeout: int = 0, generator: bool = False) -> dict:
    """Return one fixed traffic's runs for every (mode, slots), static with `timeout`, and their head-to-head cells."""
    runs, h2h = {mode: [] for mode in MODES}, []
    for slots in SLOTS:
        pair = {mode: simulate(requests, slots, mode, timeout if get_policy(mode).has_timeout else 0) for mode in MODES}
        for mode in MODES:
            runs[mode].append(_flat(pair[mode]))
        h2h.append(h2h_cells(pair["static"], pair["continuous"], window))
    return {
        **_traffic(requests),
        "runs": runs,
        "h2h": h2h,
        "window": window,
        "timeout": timeout,
        "generator": generator,
        "requests": len(requests),
    }


def lesson_config(key: str) -> TrafficConfig:
    """Return a lesson's traffic: the served page's default traffic with the lesson's settings (app/story.py)."""
    return replace(TrafficConfig(), **story.LESSONS[key][1])


def precompute_all(config: TrafficConfig, window: int = 64) -> dict:
    """Return the page's whole table: generated traffic per seed, and the chapter's, the worked example, the lessons."""
    fixed = {
        # Moving the seed on the chapter's traffic shows generated traffic, as on the served page.
        "chapter": precompute_fixed(chapter_traffic(), window, generator=True),
        "worked": precompute_fixed(worked.worked_example(), worked.WINDOW, worked.BATCH_TIMEOUT),
    }
    # The lessons at the default seed only: their sentences hold on every seed (tests/test_page_claims.py).
    for key in story.LESSONS:
        fixed[key] = precompute_fixed(generate(lesson_config(key)), window)
    generated = precompute(config, window)
    counts = {t["requests"] for t in (*fixed.values(), generated)}
    return {
        "generated": generated,
        "fixed": fixed,
        "h2h_templates": {str(n): h2h_template(n, window) for n in sorted(counts)},
    }


def offline_links(text: str) -> str:
    """Keep the in-app links the page can open in place; a link that needs the server becomes plain text saying so."""

    def keep(match: re.Match) -> str:
        query = parse_qs(match.group(1).lstrip("?"))
        tab = query.get("tab", ["simulator"])[-1]
        if set(query) <= LINK_KEYS and tab in TABS and "clock" not in query:
            return match.group(0)
        return f'{match.group(2)} <span class="bv-served-only">(in the served app)</span>'

    return IN_APP_LINK.sub(keep, text)


def batch_intro() -> str:
    """Return the served batch view's heading and paragraph (app/batch_view.py INTRO)."""
    from .batch_view import INTRO

    return INTRO


def story_html(batch: bool) -> str:
    """Return the chapter's story under the widget, in the served page's order, with the loop's and batch's places."""
    lessons = "".join(
        f'<button type="button" data-lesson="{key}" aria-pressed="false">{html.escape(label)}</button>'
        for key, (label, _values) in story.LESSONS.items()
    )
    parts = [
        story.WHY,
        '<div id="bv-loop" data-part="loop"></div>',
        chapter.restructured_loop_html(),
    ]
    if batch:
        parts += [batch_intro(), '<div id="bv-batch" data-part="batch"></div>', chapter.build_batch_html()]
    # Without assets/batch.js and app/batch_data.py the batch at the cursor and its texts, which speak of "the batch
    # view above", are left out.
    parts += [
        '<h3>Head to head</h3><div id="bv-h2h" class="bv-h2h-full"></div><div id="bv-bars" class="bv-bars"></div>',
        story.SPREAD,
        f'<div class="bv-choices" role="group" aria-label="Lessons">{lessons}</div>',
        chapter.spread_argument_html(),
        story.ONE_SLOT,
        '<div class="bv-choices"><button type="button" data-one-slot="1">Try slots = 1</button></div>',
        chapter.affordable_html(),
        story.NOT_FIXED,
        # The served page measures both schedules on a real model here (the replay): that needs its server.
        chapter.PRODUCTION,
        chapter.run_locally_html(),
        chapter.WHATS_NEXT,
    ]
    return offline_links("".join(parts))


def _worked_html() -> str:
    requests = worked.worked_example()
    static = simulate(requests, worked.SLOTS, "static", worked.BATCH_TIMEOUT)
    continuous = simulate(requests, worked.SLOTS, "continuous")
    return story.worked_html(worked.worked_figures(static, continuous))


def _exercises() -> tuple[str, list[str], str]:
    """Return the three exercises' Bokeh script and divs, and the Bokeh JavaScript they need, all inline."""
    sections = (knee_section(), spread_section(), temperature_section())
    doc = Document()
    for layout, _redraw in sections:
        doc.add_root(layout)
    # Each section's script fills its views on load too, so the first view and every later one share one path.
    for _layout, redraw in sections:
        doc.js_on_event("document_ready", redraw)
    # The views pass the page's stylesheet to each model as text, written out once per model; one shared sheet
    # per text is written once (about 110 kB less).
    shared: dict[str, InlineStyleSheet] = {}
    for model in list(doc.models):
        sheets = getattr(model, "stylesheets", None)
        if sheets and any(isinstance(sheet, str) for sheet in sheets):
            model.stylesheets = [
                shared.setdefault(sheet, InlineStyleSheet(css=sheet)) if isinstance(sheet, str) else sheet
                for sheet in sheets
            ]
    script, divs = components([layout for layout, _ in sections])
    # Only the Bokeh bundles these models use, inline; Panel's registered extensions would come as <script src>.
    bundle = bundle_for_objs_and_resources([doc], INLINE)
    return script, list(divs), bundle.scripts(tag=True)


def _module() -> str:
    """Return the page's one module: the served page's renderer (with the batch view), the quiz and the export host."""
    parts = [RENDERER_JS, *(path.read_text(encoding="utf-8") for path in (QUIZ_JS, GLUE_JS, LINEUP_JS))]
    code = "\n".join(parts)
    if re.search(r"</script|<!--", code, re.IGNORECASE):
        raise RuntimeError("a page script holds '</script' or '<!--', which would end it early")
    return code


def _json(value) -> str:
    # "</" cannot end the data's <script> element when written as "<\/" (the same string to JSON).
    return json.dumps(value, separators=(",", ":")).replace("</", "<\\/")


def build_page(config: TrafficConfig | None = None, window: int = 64, title: str = "batchviz") -> str:
    """Return the static page's HTML: the served page's tabs, widget, story, exercises and quiz, no server."""
    config = config or TrafficConfig()
    theme = palette.THEMES["light"]
    data = {
        **precompute_all(config, window),
        "config": renderer_config(theme, PLAY_INTERVAL_MS),  # with batch.js's constants, as on the served page
        "defaults": {"mode": "continuous", "slots": CHAPTER_SLOTS, "seed": config.seed, "window": window},
        "worked_slots": worked.SLOTS,
        "slots_end": SLOTS.stop - 1,
        "min_label_cells": MIN_LABEL_CELLS,
        "completed_only": COMPLETED_ONLY,
        "bars": {
            "groups": H2H_GROUPS,
            "colours": {"static": palette.STATIC_COLOR, "continuous": palette.CONTINUOUS_COLOR},
        },
        "policies": {mode: policy_fields(mode, "paged") for mode in MODES},  # what the renderer reads, not names
        "pair": list(CHAPTER_PAIR),  # the full head-to-head's two columns
        "length_kinds": list(LENGTH_KINDS),
        "lessons": {key: values for key, (_label, values) in story.LESSONS.items()},
        "lesson_slots": story.LESSON_SLOTS,
        "generator_defaults": {"lengths": config.lengths, "arrival_window": config.arrival_window},
        "lesson_base": {"lengths": TrafficConfig.lengths, "arrival_window": TrafficConfig.arrival_window},
        "tabs": list(TABS),
        "quiz": {"intro": QUIZ_INTRO, "questions": questions_data()},
        "lineups": export_lineups(),
    }
    script, divs, bokeh_js = _exercises()
    tabs = "".join(
        f'<button type="button" role="tab" id="bv-tab-{key}" data-tab="{key}" aria-controls="bv-panel-{key}" '
        f'aria-selected="{"true" if k == 0 else "false"}" tabindex="{0 if k == 0 else -1}">{html.escape(name)}</button>'
        for k, (key, name) in enumerate(TABS.items())
    )
    traffic = "".join(
        f'<button type="button" data-traffic="{key}" aria-pressed="false">{html.escape(label)}</button>'
        for key, label in TRAFFIC_BUTTONS
    )

    def panel(key: str, body: str, hidden: bool = True, cls: str = "") -> str:
        return (
            f'<section role="tabpanel" id="bv-panel-{key}" aria-labelledby="bv-tab-{key}" tabindex="0"'
            f"{' hidden' if hidden else ''}{f' class={cls!r}' if cls else ''}>{body}</section>"
        )

    simulator = (
        '<div id="bv-widget" class="bv-widget"></div>'
        f'<div id="bv-worked" hidden>{_worked_html()}</div>'
        f'<div class="bv-choices" role="group" aria-label="Traffic">{traffic}</div>'
        f'<div class="bv-story">{story_html(batch=True)}</div>'
    )
    variables = "; ".join(f"{k}: {v}" for k, v in palette.css_variables(theme).items())
    page = (
        '<!DOCTYPE html>\n<html lang="en">\n<head>\n<meta charset="utf-8">\n'
        '<meta name="viewport" content="width=device-width, initial-scale=1">\n'
        f"<title>{html.escape(title)}</title>\n<style>{CSS}{EXPORT_CSS}</style>\n</head>\n"
        f'<body>\n<div class="bv-app" style="{variables}">\n'
        '<header class="bv-header"><h1>Static vs continuous batching</h1><p>Each row is a batch slot, each column '
        "one forward pass. Every setting was computed in advance, so this page needs no server.</p></header>\n"
        '<main class="bv-main">\n'
        f'<div class="bv-tabs" role="tablist" aria-label="Parts of the page">{tabs}</div>\n'
        '<div id="bv-message" class="bv-message" role="alert" hidden></div>\n'
        + panel("simulator", simulator, hidden=False)
        + "".join(panel(key, div, cls="bv-exercise") for key, div in zip(("knee", "spread", "temperature"), divs))
        + panel("schedulers", lineup_panel())
        + panel("quiz", '<div id="bv-quiz"></div>')
        + "\n</main>\n</div>\n"
        f'<script type="application/json" id="bv-data">{_json(data)}</script>\n'
        f'<script type="module">{_module()}</script>\n'
        f"{bokeh_js}\n{script}\n</body>\n</html>\n"
    )
    page = drop_linked_scripts(page)
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
