"""The three exercises on the static page: what every setting of their controls shows, precomputed by the served views.

Each text is the served view's own (app/exercises/: its functions, its words, its controls' labels and ranges), made
here for every preset pair, offered rate and target of the knee, every sigma of the spread and both samplers; the
figures' payloads are the ones the served figures receive. app/web/export/export_knee.js and export_charts.js pick
what the learner's settings reach and draw it with the served page's own chart hosts (app/web/charts/).
"""

from __future__ import annotations

import html
import json
from functools import cache

from app.exercises.charts import charts_payload
from app.exercises.knee import (
    EXPLAIN,
    INTRO,
    KneeView,
    assumptions_html,
    cached_sweep,
    other_rate,
    points_data,
    table_html,
    verdict_html,
)
from app.exercises.knee_plots import CHART_MODULES
from app.exercises.knee_words import (
    PAGE_RATE_PER_S,
    keeps_up_html,
    kept_full,
    latency_html,
    load_html,
    motivation_html,
    moves_html,
    offered_tokens_per_s,
)
from app.exercises.knee_words import guess_html as knee_guess_html
from app.exercises.spread import (
    GUESSES,
    SIGMAS,
    SpreadView,
    case,
    curve_spec,
    guess_html,
    histogram_specs,
    spread_table,
)
from app.exercises.spread import WHY as SPREAD_WHY
from app.exercises.temperature import ASSERTIONS, BUGGY, CORRECT, TemperatureView, assertion_html, draws_html, row_specs
from app.exercises.temperature import WHY as TEMPERATURE_WHY
from app.export.views import pack
from core.clock.hardware import (
    ACCELERATOR_OPTIONS,
    ACCELERATORS,
    MODEL_OPTIONS,
    MODEL_SHAPES,
    cost_model,
)
from core.measure.sweep import DEFAULT_BATCHES, DEFAULT_RATE_PER_S, decode_knee, knee, retarget
from core.workload.traffic import LENGTH_KINDS

# Each exercise bundle is the served figure host (its `render`) with this page's part; two bundles, as both hosts
# export `render` and one module cannot hold two.
KNEE_MODULES = (*CHART_MODULES, "charts/knee_host.js", "export/export_pack.js", "export/export_figures.js",
                "export/export_knee.js")  # fmt: skip
CHARTS_MODULES = ("words.js", "charts/chart.js", "charts/charts_host.js", "export/export_pack.js",
                  "export/export_figures.js", "export/export_charts.js")  # fmt: skip
# The rates the static page offers (the served view takes any): each is a timed sweep per preset pair, ~0.6 s apiece,
# and one more at the rate "what moves the knee" compares with, so three rates keep `batchviz export` to 54 sweeps.
EXPORT_RATES = (PAGE_RATE_PER_S, DEFAULT_RATE_PER_S, 320.0)  # the page's below capacity, the CLI's, a flood
TAIL = "</p>"  # what follows the guess's sentence in the knee's verdict (app/exercises/knee.py verdict_html)
# The exercises' own controls, in the page's stylesheet (the served page's are Panel's widgets).
EXERCISES_CSS = """
.bv-controls { display: flex; flex-wrap: wrap; gap: 6px 18px; align-items: center; margin: 8px 0; }
.bv-field { display: inline-flex; flex-direction: column; gap: 2px; font-size: 0.9rem; }
.bv-field select { font: inherit; min-height: 30px; max-width: 100%; color: inherit;
  background: var(--bv-background, #fff); border: 1px solid #888; border-radius: 4px; }
.bv-options { display: flex; flex-direction: column; gap: 0.35rem; margin: 0.3rem 0 0.6rem; }
.bv-options label, .bv-check { display: flex; align-items: flex-start; gap: 0.5rem; line-height: 1.35;
  overflow-wrap: anywhere; cursor: pointer; }
.bv-options input, .bv-check input { flex: none; margin-top: 0.2rem; accent-color: #0072B2; }
.bv-options.bv-code span { font-family: ui-monospace, monospace; font-size: 0.9rem; }
.bv-exercise .bv-choices button:not([aria-pressed=true]) { background: rgba(128, 128, 128, 0.14); }  /* either theme */
.bv-exercise .bv-choices button.bv-primary { background: #0072B2; border-color: #0072B2; color: #fff; }
.bv-choices button:disabled { opacity: 0.5; cursor: default; }
"""


@cache
def served_views() -> dict:
    """Return the served exercises' views, built as a session shows them: their words, labels and ranges."""
    views = {"knee": KneeView(), "spread": SpreadView(), "temperature": TemperatureView()}
    for view in views.values():
        view.__panel__()
    return views


def knee_at(accelerator: str, model_shape: str, rate: float) -> dict:
    """Return what exercise 1 shows at one preset pair and rate, at every target its slider offers, as served.

    The verdict is kept without its last sentence, the guess's (`guesses`: by the knee's batch, one per guess).
    """
    model, target_slider = cost_model(accelerator, model_shape), served_views()["knee"].target
    swept, other = cached_sweep(rate, model), other_rate(rate)
    full, offered = dict(kept_full(model)), offered_tokens_per_s(rate)
    out = {
        "points": points_data(swept),
        "load": load_html(rate, model, tuple(swept)),
        "motivation": motivation_html(model),
        "assumptions": assumptions_html(rate, model),  # the table's last line, as served
        **{name: [] for name in ("best", "verdicts", "tables", "moves")},
        "guesses": {},
    }
    for target in targets(target_slider):
        points = tuple(retarget(list(swept), target))
        best, decode = knee(list(points)), decode_knee(list(points))
        keeps_up = "" if best is None else keeps_up_html(best.batch, offered, full, best.one_run)
        verdict, words = verdict_html(best, decode, target, 1, keeps_up), knee_guess_html(1, best)
        if not verdict.endswith(words + TAIL):
            raise RuntimeError("app/exercises/knee.py verdict_html no longer ends with the guess: update this split")
        key = str(best.batch if best else "none")
        out["guesses"].setdefault(key, [knee_guess_html(b, best, points) for b in DEFAULT_BATCHES])
        out["best"].append(key)
        out["verdicts"].append(verdict.removesuffix(words + TAIL))
        out["tables"].append(table_html(points, target))
        out["moves"].append(moves_html(points, target, rate, cached_sweep(other, model), other) + latency_html(points))
    return out


def targets(slider) -> list[float]:
    """Return every value the served target slider offers."""
    count = round((slider.end - slider.start) / slider.step)
    return [float(slider.start + k * slider.step) for k in range(count + 1)]


def knee_data(accelerators=ACCELERATORS, models=MODEL_SHAPES, rates=EXPORT_RATES) -> dict:
    """Return exercise 1 at every setting the page offers: each preset pair and rate packed (inflated when reached)."""
    view = served_views()["knee"]
    return {
        "ask": verdict_html(None, None, view.itl_target_ms, None),  # the question, before a guess, at any target
        "tail": TAIL,
        "batches": list(DEFAULT_BATCHES),
        "targets": targets(view.target),
        "at": {
            f"{a}/{m}/{r:g}": pack([json.dumps(knee_at(a, m, r), separators=(",", ":"))])
            for a in accelerators
            for m in models
            for r in rates
        },
    }


def spread_data() -> dict:
    """Return exercise 2 at every sigma its slider offers: the figures' payloads and the table, and each verdict."""
    at = []
    for sigma in SIGMAS:
        cases = [case(kind, sigma) for kind in LENGTH_KINDS]
        views = {
            "histograms": charts_payload(histogram_specs(cases)),
            "curve": charts_payload([curve_spec(sigma)]),
            "table": spread_table(cases, sigma),
        }
        at.append(json.dumps(views, separators=(",", ":")))
    return {"sigmas": [float(s) for s in SIGMAS], "verdicts": [guess_html(key) for key in GUESSES], "at": pack(at)}


def temperature_data() -> dict:
    """Return exercise 3: each assertion's verdict on both samplers, the figures and draws with the bug off and on."""
    return {
        "verdicts": [assertion_html(code) for code in ASSERTIONS],
        "off": {"charts": charts_payload(row_specs(CORRECT)), "draws": draws_html(CORRECT)},
        "on": {"charts": charts_payload(row_specs(BUGGY)), "draws": draws_html(BUGGY)},
    }


def exercises_data() -> dict:
    """Return what the page's exercise modules read (app/web/export/export_knee.js, export_charts.js)."""
    return {"knee": knee_data(), "spread": spread_data(), "temperature": temperature_data()}


# ---- the sections' markup: the served layouts' order and words, with plain controls where Panel's widgets stand ----
def _part(name: str, body: str = "", hidden: bool = False) -> str:
    return f'<div data-part="{name}"{" hidden" if hidden else ""}>{body}</div>'


def _select(name: str, label: str, options: dict[str, str], value: str) -> str:
    items = "".join(
        f'<option value="{html.escape(k)}"{" selected" if k == value else ""}>{html.escape(v)}</option>'
        for k, v in options.items()
    )
    return (
        f'<label class="bv-field">{html.escape(label)}<select name="{name}" autocomplete="off">{items}</select></label>'
    )


def _swap(options: dict[str, str]) -> dict[str, str]:
    return {value: label for label, value in options.items()}  # the served selects' options are label -> key


def _range(name: str, slider, value: float) -> str:
    """Return a range input with the served slider's label, bounds and step, and its value beside the label."""
    return (
        f'<label class="bv-range"><span class="bv-range-label">{html.escape(slider.name)}: </span>'
        f'<output data-value="{name}">{value:g}</output><input type="range" name="{name}" min="{slider.start:g}" '
        f'max="{slider.end:g}" step="{slider.step:g}" value="{value:g}" aria-label="{html.escape(slider.name)}" '
        'autocomplete="off"></label>'
    )


def _radios(name: str, label: str, options, code: bool = False) -> str:
    items = "".join(
        f'<label><input type="radio" name="{name}" value="{k}" autocomplete="off">'
        f"<span>{html.escape(text)}</span></label>"
        for k, text in enumerate(options)
    )
    return f'<div class="bv-options{" bv-code" if code else ""}" role="radiogroup" aria-label="{label}">{items}</div>'


def _button(part: str, label: str) -> str:
    button = f'<button type="button" class="bv-primary" data-part="{part}" disabled>{html.escape(label)}</button>'
    return f'<div class="bv-choices">{button}</div>'


def knee_section() -> str:
    """Return exercise 1's markup in the served view's order; app/web/export/export_knee.js fills its parts."""
    view = served_views()["knee"]
    guesses = "".join(
        f'<button type="button" data-batch="{b}" aria-pressed="false">{b}</button>'
        for b in view.guesses.options.values()
    )
    note = (
        "<p>On this page the presets and three rates were swept in advance; the served app also lets you edit every "
        "parameter and pick any rate.</p>"
    )
    rates = {f"{r:g}": f"{r:g}" for r in EXPORT_RATES}
    return (
        f'<div class="bv-story" data-exercise="knee">{INTRO}{note}{_part("motivation")}'
        f'<div class="bv-controls">{_select("knee-rate", view.rate.name, rates, f"{view.rate_per_s:g}")}'
        f"{_range('knee-target', view.target, view.itl_target_ms)}</div>{_part('load')}"
        f'<div class="bv-controls">'
        f"{_select('knee-accelerator', 'Accelerator', _swap(ACCELERATOR_OPTIONS), view.accelerator)}"
        f"{_select('knee-model', 'Model', _swap(MODEL_OPTIONS), view.model_shape)}</div>"
        f'{_part("verdict")}<div class="bv-choices bv-knee-guess" role="group" aria-label="Your guess">{guesses}</div>'
        f"{_part('charts')}{EXPLAIN}{_part('table')}{_part('moves')}</div>"
    )


def spread_section() -> str:
    """Return exercise 2's markup in the served view's order: the guess first, the ratios once it is revealed."""
    view = served_views()["spread"]
    intro = view.__panel__().objects[0].object  # the served view's opening words
    return (
        f'<div class="bv-story" data-exercise="spread">{intro}'
        f"{_radios('spread-guess', 'Your guess', [label for label, _, _ in GUESSES.values()])}"
        f"{_button('reveal', view.reveal_button.name)}{_part('verdict', hidden=True)}"
        f"{_range('spread-sigma', view.slider, view.sigma)}{_part('histograms')}{_part('table', hidden=True)}"
        f"{_part('curve', hidden=True)}{_part('why', SPREAD_WHY, hidden=True)}</div>"
    )


def temperature_section() -> str:
    """Return exercise 3's markup in the served view's order: the test to pick and run, then what the bug does."""
    view = served_views()["temperature"]
    intro, heading = view.__panel__().objects[0].object, view.demo.objects[0].object
    bug = (
        f'<label class="bv-check"><input type="checkbox" name="temperature-bug" autocomplete="off"><span>'
        f"{html.escape(view.toggle.name)}</span></label>"
    )
    demo = f"{heading}{bug}{_part('charts')}{_part('draws')}{TEMPERATURE_WHY}"
    return (
        f'<div class="bv-story" data-exercise="temperature">{intro}'
        f"{_radios('temperature-test', 'The test to run', ASSERTIONS, code=True)}"
        f"{_button('run', view.run_button.name)}{_part('verdict')}{_part('demo', demo, hidden=True)}</div>"
    )


def exercise_sections() -> dict[str, str]:
    """Return each exercise's markup by its tab's key."""
    return {"knee": knee_section(), "spread": spread_section(), "temperature": temperature_section()}
