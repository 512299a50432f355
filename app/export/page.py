"""`batchviz export`: the served page as one self-contained HTML page that works from file://.

The page is the served page's own host (app/web/host.js) and renderer drawing the served page's own view JSON, made
here for every setting the page carries (app/export/views.py): the chapter's traffic, generated traffic at seeds 0-99,
the worked example, the story's lessons and the memory lessons, each at slots 1-16. A small server in the page
(app/web/export/export_host.js) answers the host as simulator/widget.py does when served. The story is the served one's,
less what needs its server (the settings' disclosures, the replay); the exercises are the served views' texts at every
setting they offer, drawn by the served chart modules (app/export/exercises.py). Nothing is fetched: the page checks
that it links no external resource.
"""

from __future__ import annotations

import html
import json
import re
from pathlib import Path
from urllib.parse import parse_qs

from app.export.exercises import CHARTS_MODULES, EXERCISES_CSS, KNEE_MODULES, exercise_sections, exercises_data
from app.export.schedulers import export_lineups, lineup_panel
from app.export.views import LESSON_SEEDS, SEEDS, SLOTS, export_views, pack
from app.memory.data import memory_json
from app.memory.lesson import MAX_BLOCKS, MIN_BLOCKS
from app.memory.view import BUDGETS, CHUNKED_INTRO, LEGEND, MEMORY_CSS, MemoryView, chunked_html
from app.memory.view import INTRO as MEMORY_INTRO
from app.page import palette
from app.page.frame import TABS as SERVED_TABS
from app.quiz.view import QUIZ_CSS, quiz_data
from app.simulator import story
from app.simulator.state import MODE_ORDER
from app.simulator.widget import INTERVAL_MS, WIDGET_MODULES
from app.simulator.widget_data import renderer_config
from app.web.bundle import bundle
from app.web.style import CSS
from core import TrafficConfig
from core.chapter.chapter_traffic import SLOTS as CHAPTER_SLOTS
from core.limits import check_writable
from core.workload.traffic import LENGTH_KINDS

# The page's main module: the served page's widget (its renderer, texts and batch view) and host, the quiz, this
# page's server and its Schedulers tab (app/web/, joined by app/web/bundle.py); the exercises have their own two.
MODULES = (
    *WIDGET_MODULES,
    *("host.js", "tabs/quiz.js", "tabs/memory.js"),
    *("export/export_pack.js", "export/export_host.js", "export/export_lineup.js", "export/export_memory.js"),
)
MODES = MODE_ORDER  # every mode the widget offers
SCRIPT_BODY = re.compile(r"(<script\b[^>]*>).*?(</script>)", re.DOTALL | re.IGNORECASE)
EXTERNAL = re.compile(r"<(?:script|link|img|iframe)\b[^>]*\b(?:src|href)=[^>]*>", re.IGNORECASE)
IN_APP_LINK = re.compile(r'<a href="(\?[^"]*)">(.*?)</a>', re.DOTALL)

# ?tab= on the file URL, as on the served page (the Schedulers tab carries its default lineup and its lessons',
# app/export/schedulers.py; the Memory tab every pool size its slider offers).
TABS = dict(SERVED_TABS)
# The URL keys the page's links and its own address may carry (app/page/url.py URL_KEYS, as far as the views reach).
LINK_KEYS = {
    *("tab", "preset", "mode", "slots", "seed", "step", "lengths", "arrival_window", "kv_blocks", "allocation"),
    *("blocks", "budget"),  # the Memory tab's
    "clock",  # on the chapter's traffic, the worked example and generated traffic at the lessons' seeds
    "theme",  # light or dark, read when the page opens (as served)
}
# The clock's two buttons, where the served page has its "On a clock" disclosure (the default accelerator and model).
CLOCK_BUTTONS = ["On a clock (ms, {accelerator}, {model})", "Back to the step axis"]
# What stands where the served page has a disclosure that needs its server.
SERVED_ONLY = {
    "replay": '<p class="bv-served-only">The served app runs both schedules through a real model here (the '
    "replay), and measures them side by side; that needs its server.</p>",
}
HEADER_NOTE = " Every setting was computed in advance, so this page needs no server."

# The page around the served page's host: the body, focus rings, the exercises' own controls (the quiz brings its own).
EXPORT_CSS = """
body { margin: 0; padding: 8px 12px 24px; color: #222; background: #fff; }
body.bv-dark { color: #E6E6E6; background: #121212; }  /* Panel's dark page, as served with ?theme=dark */
.bv-app { max-width: 1280px; margin: 0 auto; font-size: 12px; line-height: 1.42857143; }  /* Panel's, as served */
.bv-app, .bv-app * { box-sizing: border-box; }
[role=tabpanel]:focus-visible, .bv-tabs [role=tab]:focus-visible, .bv-app button:focus-visible,
.bv-app input:focus-visible, .bv-app a:focus-visible, .bv-app [tabindex]:focus-visible {
  outline: 3px solid var(--bv-focus, #0072B2); outline-offset: 2px; }
.bv-exercise { overflow-x: auto; overflow-y: hidden; }
.bv-choices { display: flex; flex-wrap: wrap; gap: 6px; margin: 8px 0; }
.bv-choices button { font: inherit; font-size: 0.9rem; padding: 5px 12px; border: 1px solid #888;
  border-radius: 4px; background: #f4f4f4; color: inherit; cursor: pointer; min-height: 32px; }
.bv-choices button[aria-pressed=true] { background: #0072B2; border-color: #0072B2; color: #fff; font-weight: 600; }
body.bv-dark .bv-choices button:not([aria-pressed=true]) { background: #2B2B2B; border-color: #777; }
.bv-served-only { color: var(--bv-muted, #555); }
"""


def offline_links(text: str) -> str:
    """Keep the in-app links the page can open in place; a link that needs the server becomes plain text saying so."""

    def keep(match: re.Match) -> str:
        query = parse_qs(match.group(1).lstrip("?"))
        tab = query.get("tab", ["simulator"])[-1]
        if set(query) <= LINK_KEYS and tab in TABS:
            return match.group(0)
        return f'{match.group(2)} <span class="bv-served-only">(in the served app)</span>'

    return IN_APP_LINK.sub(keep, text)


def export_story(served: list[list]) -> list[list]:
    """Return the served page's story (App.story) for this page, less what needs the server.

    Its links open in place or are named as served-only; the settings' disclosures are left out (their widgets
    need the server); the replay's place says what it does.
    """
    out = []
    for kind, value in served:
        if kind == "row":
            value = [part for part in value if part[0] != "disclosure"] + [["buttons", "clock"]]
        elif kind == "disclosure":
            kind, value = "html", SERVED_ONLY[value]
        if kind == "html":
            value = offline_links(value)
        out.append([kind, value])
    return out


def _module(names: tuple[str, ...] = MODULES) -> str:
    """Return one of the page's modules (app/web/ files joined): by default the main one, with the page's server."""
    code = bundle(*names)
    if re.search(r"</script|<!--", code, re.IGNORECASE):
        raise RuntimeError("a page script holds '</script' or '<!--', which would end it early")
    return code


def _json(value) -> str:
    # "</" cannot end the data's <script> element when written as "<\/" (the same string to JSON).
    return json.dumps(value, separators=(",", ":")).replace("</", "<\\/")


def page_data(config: TrafficConfig | None = None, window: int = 64, seeds=SEEDS, lesson_seeds=LESSON_SEEDS) -> dict:
    """Return what the page's server reads: every view packed by place, what each button loads, the story, the quiz."""
    from app.page.frame import GENERATED_NOTE, HEADER

    config = config or TrafficConfig()
    packs, meta = export_views(config, window, seeds, lesson_seeds)
    served_story = meta.pop("story")
    meta["buttons"] = {**meta["buttons"], "clock": clock_buttons()}
    return {
        "packs": packs,
        **meta,  # places, actions, buttons
        "story": export_story(served_story),
        "header": HEADER.replace("</p>", HEADER_NOTE + "</p>", 1),
        "tabs": TABS,
        "link_keys": sorted(LINK_KEYS),
        # The renderer's constants and the page's custom properties per theme (?theme=dark: the served page's dark).
        "themes": {
            name: {"config": renderer_config(theme, INTERVAL_MS), "variables": palette.css_variables(theme)}
            for name, theme in palette.THEMES.items()
        },
        "defaults": {"mode": "continuous", "slots": CHAPTER_SLOTS, "seed": TrafficConfig.seed, "window": window},
        "slots_end": SLOTS.stop - 1,
        "length_kinds": list(LENGTH_KINDS),
        "lessons": {key: values for key, (_label, values) in story.LESSONS.items()},
        "generator": {"lengths": config.lengths, "arrival_window": config.arrival_window},
        "words": {"generated": GENERATED_NOTE},
        "quiz": quiz_data(),
        "lineups": export_lineups(),
        "memory_tab": memory_tab(),
    }


def clock_buttons() -> list[str]:
    """Return the clock's buttons, naming the accelerator and model the page's clock views assume."""
    from core.clock.hardware import ACCELERATORS, DEFAULT_ACCELERATOR, DEFAULT_MODEL_SHAPE, MODEL_SHAPES

    names = {"accelerator": ACCELERATORS[DEFAULT_ACCELERATOR].name, "model": MODEL_SHAPES[DEFAULT_MODEL_SHAPE].name}
    return [label.format(**names) for label in CLOCK_BUTTONS]


def memory_tab() -> dict:
    """Return the Memory tab's data: every pool size's view (packed) and the huge-prompt lesson at every budget."""
    defaults = MemoryView()
    return {
        "min_blocks": MIN_BLOCKS,
        "max_blocks": MAX_BLOCKS,
        "default_blocks": defaults.blocks,
        "budgets": list(BUDGETS),
        "default_budget": defaults.budget,
        "pools": pack([memory_json(blocks) for blocks in range(MIN_BLOCKS, MAX_BLOCKS + 1)]),
        "chunked": {str(budget): chunked_html(budget) for budget in BUDGETS},
    }


def memory_section() -> str:
    """Return the Memory tab's HTML around what app/web/export/export_memory.js fills in, in the served tab's order."""
    part = lambda name: f'<div data-part="{name}"></div>'  # noqa: E731
    return (
        f'<div id="bv-memory-tab">{MEMORY_INTRO}{part("controls")}{part("lesson")}{LEGEND}{part("modes")}'
        f"{CHUNKED_INTRO}<p>Token budget per pass, in tokens:</p>{part('budgets')}{part('chunked')}</div>"
    )


def build_page(config: TrafficConfig | None = None, window: int = 64, title: str = "batchviz", **reach) -> str:
    """Return the static page's HTML: the served page's host, story, tabs, exercises and quiz, no server.

    `reach` (seeds=, lesson_seeds=) narrows the seeds carried, for a test's smaller page.
    """
    data = page_data(config, window, **reach)

    def section(key: str, body: str, cls: str = "") -> str:
        return (
            f'<section data-tab="{key}" id="bv-section-{key}" hidden{f" class={cls!r}" if cls else ""}>{body}</section>'
        )

    sections = (
        "".join(section(key, body, "bv-exercise") for key, body in exercise_sections().items())
        + section("memory", memory_section())
        + section("schedulers", lineup_panel())
        + section("quiz", '<div id="bv-quiz"></div>')
    )
    theme = palette.THEMES["light"]
    variables = "; ".join(f"{k}: {v}" for k, v in palette.css_variables(theme).items())
    page = (
        '<!DOCTYPE html>\n<html lang="en">\n<head>\n<meta charset="utf-8">\n'
        '<meta name="viewport" content="width=device-width, initial-scale=1">\n'
        f"<title>{html.escape(title)}</title>\n"
        f"<style>{CSS}{MEMORY_CSS}{QUIZ_CSS}{EXPORT_CSS}{EXERCISES_CSS}</style>\n</head>\n"
        f'<body>\n<main class="bv-app" style="{variables}">\n<div id="bv-page"></div>\n'
        f'<div id="bv-sections">{sections}</div>\n</main>\n'
        f'<script type="application/json" id="bv-data">{_json(data)}</script>\n'
        f'<script type="module">{_module()}</script>\n'
        f'<script type="application/json" id="bv-exercises">{_json(exercises_data())}</script>\n'
        f'<script type="module">{_module(KNEE_MODULES)}</script>\n'
        f'<script type="module">{_module(CHARTS_MODULES)}</script>\n'
        "</body>\n</html>\n"
    )
    # Look at the markup only: a module's code may spell a tag in a string.
    linked = EXTERNAL.findall(SCRIPT_BODY.sub(r"\1\2", page))
    if linked:
        # A file:// page cannot fetch these; fail here rather than ship a page that breaks offline.
        raise RuntimeError(f"the page would load external resources: {linked}")
    return page


def export_page(path: str | Path, config: TrafficConfig | None = None, window: int = 64) -> Path:
    """Write the static page to `path` and return it; a place that cannot be written raises OSError before building."""
    check_writable(path)
    path = Path(path)
    path.write_text(build_page(config, window, title="batchviz: static vs continuous batching"), encoding="utf-8")
    return path
