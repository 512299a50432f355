"""The three exercises on the static page: every setting their controls reach, precomputed by the core."""

from __future__ import annotations

import json
import re

from bokeh.layouts import column, row
from bokeh.models import (
    Button,
    Checkbox,
    CustomJS,
    Div,
    RadioButtonGroup,
    RadioGroup,
    Select,
    Slider,
)

from app.exercises.knee import EXPLAIN, INTRO, QUESTION, cached_sweep, points_data, verdict_html
from app.exercises.knee_plots import CHART_MODULES
from app.exercises.knee_words import PAGE_RATE_PER_S, kept_full, load_html, motivation_html, offered_tokens_per_s
from app.exercises.spread import GUESSES, SIGMAS, case, curve_spec, guess_html, histogram_specs, spread_table
from app.exercises.spread import WHY as SPREAD_WHY
from app.exercises.temperature import ASSERTIONS, BUGGY, CORRECT, assertion_html, draws_html, row_specs
from app.exercises.temperature import WHY as TEMPERATURE_WHY
from app.web.bundle import ASSETS, bundle
from app.web.style import CHOICE_CSS, CSS
from core.clock.hardware import ACCELERATORS, DEFAULT_ACCELERATOR, DEFAULT_MODEL_SHAPE, MODEL_SHAPES, cost_model
from core.measure.sweep import DEFAULT_BATCHES, DEFAULT_RATE_PER_S

# The served page's generic row of charts (app/web/charts/charts_host.js chartsHtml), inlined into the spread's and
# temperature's CustomJS; the exported page lays a row out for this width (each chart scales down with the column).
CHARTS_MODULES = ("words.js", "charts/chart.js", "charts/charts_host.js")
ROW_WIDTH = 900
JS_PATH = ASSETS / "export" / "export_exercises.js"
# The rates the static page offers (the served view takes any): each is a timed sweep per preset pair, ~0.6 s apiece,
# so three rates (light, the default, heavy) keep `batchviz export` to about 27 sweeps.
EXPORT_RATES = (PAGE_RATE_PER_S, DEFAULT_RATE_PER_S, 320.0)  # the page's below capacity, the CLI's, a flood
DEFAULT_TARGET_MS = 50.0
# On a phone a row of controls wraps onto more lines rather than running off the page.
WRAP = {"flex-wrap": "wrap", "gap": "4px 0"}
WRAP_BUTTONS = ".bk-btn-group { flex-wrap: wrap; row-gap: 4px; }"


def _div(text: str = "", **kw) -> Div:
    return Div(text=text, stylesheets=[CSS], sizing_mode="stretch_width", **kw)


def _code(part: str, modules: tuple[str, ...] = ()) -> str:
    """Return the script's shared helpers and one exercise's part (the file is split at `// ---- name`).

    `modules`: app/web/ modules the part calls, bundled (their imports checked) and inlined as plain functions, since
    a CustomJS body cannot import: the same code the served page runs as a module.
    """
    text = JS_PATH.read_text(encoding="utf-8")
    sections = dict(s.split("\n", 1) for s in text.split("// ---- ")[1:])
    inlined = re.sub(r"^export ", "", bundle(*modules), flags=re.MULTILINE) if modules else ""
    return inlined + sections["helpers"] + sections[part]


def knee_data() -> dict:
    """Return the sweep's plotted columns for every accelerator, model and offered rate."""

    def at(rate: float, model) -> dict:
        points = cached_sweep(rate, model)
        words = {"load_html": load_html(rate, model), "motivation": motivation_html(model)}
        load = {"offered": offered_tokens_per_s(rate), "kept_full": [list(bt) for bt in kept_full(model)]}
        return {**points_data(points), **words, **load}

    return {
        a: {m: {f"{r:g}": at(r, cost_model(a, m)) for r in EXPORT_RATES} for m in MODEL_SHAPES} for a in ACCELERATORS
    }


def _knee_controls() -> dict:
    """Return the static page's knee controls: presets and rate as selects, the target slider, the guess buttons."""
    return dict(
        accelerator=Select(
            title="Accelerator",
            name="knee-accelerator",
            value=DEFAULT_ACCELERATOR,
            options=[(k, a.name) for k, a in ACCELERATORS.items()],
            width=200,
        ),
        model=Select(
            title="Model",
            name="knee-model",
            value=DEFAULT_MODEL_SHAPE,
            options=[(k, m.name) for k, m in MODEL_SHAPES.items()],
            width=200,
        ),
        rate=Select(
            title="Arrival rate (requests/s)",
            name="knee-rate",
            value=f"{PAGE_RATE_PER_S:g}",
            options=[f"{r:g}" for r in EXPORT_RATES],
            width=200,
        ),
        target=Slider(
            title="ITL target (ms)", name="knee-target", start=5, end=200, step=1, value=DEFAULT_TARGET_MS, width=260
        ),
        guess=RadioButtonGroup(
            name="knee-guess",
            labels=[str(b) for b in DEFAULT_BATCHES],
            active=None,
            css_classes=["bv-knee-guess"],
            stylesheets=[WRAP_BUTTONS],
        ),
    )


def knee_section():
    """Return exercise 1: the learner guesses first; the knee is found in the browser, for any target."""
    charts = _div(name="knee-charts")
    controls = _knee_controls()
    verdict, table = (
        _div(verdict_html(None, None, DEFAULT_TARGET_MS, None), name="knee-verdict"),
        _div(name="knee-table"),
    )
    load = _div(load_html(PAGE_RATE_PER_S, cost_model()), name="knee-load")
    motivation = _div(motivation_html(cost_model()), name="knee-motivation")
    redraw = CustomJS(
        args=dict(
            data_json=json.dumps(knee_data(), separators=(",", ":")),
            batches=list(DEFAULT_BATCHES),
            question=QUESTION,
            **controls,
            charts=charts,
            width=ROW_WIDTH,
            verdict=verdict,
            table=table,
            load=load,
            motivation=motivation,
        ),
        code=_code("knee", CHART_MODULES),
    )
    for name in ("accelerator", "model", "rate", "target"):
        controls[name].js_on_change("value", redraw)
    controls["guess"].js_on_change("active", redraw)
    layout = column(
        _div(
            INTRO + "<p>On this page the presets and three rates were swept in advance; the served app also lets "
            "you edit every parameter and pick any rate.</p>"
        ),
        motivation,
        row(
            controls["accelerator"],
            controls["model"],
            controls["rate"],
            controls["target"],
            styles=WRAP,
            sizing_mode="stretch_width",
        ),
        load,
        verdict,
        controls["guess"],
        charts,
        _div(EXPLAIN),
        table,
        sizing_mode="stretch_width",
    )
    return layout, redraw


def precomputed_choice(name: str, labels, verdicts: list[str]) -> tuple[RadioGroup, Div]:
    """Return a choice and the Div that shows the chosen option's verdict, each computed by the core in advance."""
    choice = RadioGroup(labels=list(labels), active=None, name=name, stylesheets=[CHOICE_CSS])
    verdict = _div(name=f"{name}-verdict")
    choice.js_on_change(
        "active",
        CustomJS(args=dict(verdicts=verdicts, verdict=verdict), code="verdict.text = verdicts[cb_obj.active];"),
    )
    return choice, verdict


def spread_data() -> dict:
    """Return, per offered sigma, the served page's chart specs (three histograms, the curve) and numbers table."""
    out = []
    for sigma in SIGMAS:
        cases = [case(kind, sigma) for kind in ("heavy", "uniform", "fixed")]
        out.append(
            {"histograms": histogram_specs(cases), "curve": [curve_spec(sigma)], "table": spread_table(cases, sigma)}
        )
    return {"sigmas": list(SIGMAS), "at": out}


def spread_section():
    """Return exercise 2: the sigma slider swaps precomputed histograms and numbers."""
    histograms, curve = _div(name="spread-histograms"), _div(name="spread-curve", visible=False)
    sigma = Slider(
        title="Spread: log-normal sigma (heavy-tailed)",
        name="spread-sigma",
        start=SIGMAS[0],
        end=SIGMAS[-1],
        step=0.1,
        value=1.2,
        width=320,
    )
    table = _div(name="spread-table", visible=False)
    redraw = CustomJS(
        args=dict(
            data_json=json.dumps(spread_data(), separators=(",", ":")),
            sigma=sigma,
            histograms=histograms,
            curve=curve,
            width=ROW_WIDTH,
            table=table,
        ),
        code=_code("spread", CHARTS_MODULES),
    )
    sigma.js_on_change("value", redraw)
    why = _div(SPREAD_WHY, visible=False)
    # As served (app/exercises/spread.py SpreadView): the guess first, and the ratios only once it is revealed.
    labels = [label for label, _, _ in GUESSES.values()]
    choice = RadioGroup(labels=labels, active=None, name="spread-guess", stylesheets=[CHOICE_CSS])
    reveal = Button(label="Reveal the ratios", button_type="primary", disabled=True, name="spread-reveal")
    verdict = _div(name="spread-guess-verdict", visible=False)
    choice.js_on_change("active", CustomJS(args=dict(reveal=reveal), code="reveal.disabled = cb_obj.active === null;"))
    reveal.js_on_event(
        "button_click",
        CustomJS(
            args=dict(
                choice=choice,
                verdict=verdict,
                verdicts=[guess_html(key) for key in GUESSES],
                shown=[verdict, table, curve, why],
                reveal=reveal,
            ),  # fmt: skip
            code="if (choice.active === null) return; verdict.text = verdicts[choice.active]; "
            "for (const part of shown) part.visible = true; choice.disabled = true; reveal.disabled = true;",
        ),
    )
    layout = column(
        _div(
            "<h3>Exercise 2: when continuous batching stops paying</h3><p>The same arrivals three times, with "
            "heavy-tailed, uniform and fixed output lengths (the same intended mean, 64 tokens). Before you see "
            "the ratios: <b>which of these lengths keeps the most of continuous batching's advantage</b> (how "
            "many times sooner it drains the queue)?</p>"
        ),
        choice,
        reveal,
        verdict,
        sigma,
        histograms,
        table,
        curve,
        why,
        sizing_mode="stretch_width",
    )
    return layout, redraw


def temperature_section():
    """Return exercise 3: the bug's checkbox swaps the two precomputed states."""
    charts = _div(name="temperature-charts")
    bug = Checkbox(
        label="Inject the bug: one temperature (the first row's) for the whole batch", name="temperature-bug"
    )
    draws = _div(draws_html(CORRECT), name="temperature-draws")
    states = {
        "off": {"charts": row_specs(CORRECT), "html": draws_html(CORRECT)},
        "on": {"charts": row_specs(BUGGY), "html": draws_html(BUGGY)},
    }
    redraw = CustomJS(
        args=dict(data_json=json.dumps(states), bug=bug, charts=charts, draws=draws, width=ROW_WIDTH),
        code=_code("temperature", CHARTS_MODULES),
    )
    bug.js_on_change("active", redraw)
    layout = column(
        _div(
            "<h3>Exercise 3: one temperature for the whole batch</h3><p>One batch of three requests with different "
            "sampling over fixed logits, from the core's sampler (outlined: the distribution each row asked "
            "for).</p>"
        ),
        bug,
        charts,
        draws,
        _div(TEMPERATURE_WHY),
        sizing_mode="stretch_width",
    )
    layout.children[1:1] = list(
        precomputed_choice("temperature-test", ASSERTIONS, [assertion_html(c) for c in ASSERTIONS])
    )
    return layout, redraw
