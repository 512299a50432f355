"""The three exercises on the static page: every setting their controls reach, precomputed by the core."""

from __future__ import annotations

import json
from pathlib import Path

from bokeh.layouts import column, row
from bokeh.models import Checkbox, ColumnDataSource, CustomJS, Div, Select, Slider

from core.hardware import ACCELERATORS, DEFAULT_ACCELERATOR, DEFAULT_MODEL_SHAPE, MODEL_SHAPES, cost_model
from core.sweep import DEFAULT_RATE_PER_S

from .exercises.knee import EXPLAIN, cached_sweep, knee_plots, points_data
from .exercises.spread import SIGMAS, case, histogram, histogram_top, spread_plots, spread_table
from .exercises.spread import WHY as SPREAD_WHY
from .exercises.temperature import BUGGY, CORRECT, draws_html, rows_data, temperature_plots
from .exercises.temperature import WHY as TEMPERATURE_WHY
from .style import CSS

JS_PATH = Path(__file__).resolve().parent.parent / "assets" / "export_exercises.js"
# The rates the static page offers (the served view takes any); each is a sweep per preset pair, ~0.2 s apiece.
EXPORT_RATES = (10.0, 20.0, 40.0, DEFAULT_RATE_PER_S, 160.0, 320.0)
DEFAULT_TARGET_MS = 50.0


def _div(text: str = "", **kw) -> Div:
    return Div(text=text, stylesheets=[CSS], sizing_mode="stretch_width", **kw)


def _code(part: str) -> str:
    """Return the script's shared helpers and one exercise's part (the file is split at `// ---- name`)."""
    text = JS_PATH.read_text(encoding="utf-8")
    sections = dict(s.split("\n", 1) for s in text.split("// ---- ")[1:])
    return sections["helpers"] + sections[part]


def knee_data() -> dict:
    """Return the sweep's plotted columns for every accelerator, model and offered rate."""
    return {
        a: {
            m: {f"{r:g}": points_data(cached_sweep(r, cost_model(a, m), DEFAULT_TARGET_MS)) for r in EXPORT_RATES}
            for m in MODEL_SHAPES
        }
        for a in ACCELERATORS
    }


def knee_section():
    """Return exercise 1: presets and rate as selects, the target as a slider, the knee found in the browser."""
    source = ColumnDataSource(points_data(cached_sweep(DEFAULT_RATE_PER_S, cost_model(), DEFAULT_TARGET_MS)))
    plots = knee_plots(source, None)
    accelerator = Select(
        title="Accelerator",
        name="knee-accelerator",
        value=DEFAULT_ACCELERATOR,
        options=[(k, a.name) for k, a in ACCELERATORS.items()],
        width=200,
    )
    model = Select(
        title="Model",
        name="knee-model",
        value=DEFAULT_MODEL_SHAPE,
        options=[(k, m.name) for k, m in MODEL_SHAPES.items()],
        width=200,
    )
    rate = Select(
        title="Arrival rate (requests/s)",
        name="knee-rate",
        value=f"{DEFAULT_RATE_PER_S:g}",
        options=[f"{r:g}" for r in EXPORT_RATES],
        width=200,
    )
    target = Slider(
        title="ITL target (ms)", name="knee-target", start=5, end=200, step=1, value=DEFAULT_TARGET_MS, width=260
    )
    table = _div(name="knee-table")
    redraw = CustomJS(
        args=dict(
            data_json=json.dumps(knee_data(), separators=(",", ":")),
            accelerator=accelerator,
            model=model,
            rate=rate,
            target=target,
            source=source,
            plots_itl=plots.itl,
            plots_throughput=plots.throughput,
            plots_latency=plots.latency,
            target_line=plots.target_line,
            knee_spans=plots.knee_spans,
            knee_label=plots.knee_label,
            table=table,
        ),
        code=_code("knee"),
    )
    for widget in (accelerator, model, rate):
        widget.js_on_change("value", redraw)
    target.js_on_change("value", redraw)
    layout = column(
        _div(
            "<h3>Exercise 1: find the knee</h3><p>Continuous batching at each batch size from 1 to 512, every step "
            "costed by the core's cost model. On this page the presets and a few rates were swept in advance; the "
            "served app also lets you edit every parameter.</p>"
        ),
        row(accelerator, model, rate, target),
        plots.itl,
        plots.throughput,
        plots.latency,
        _div(EXPLAIN),
        table,
        sizing_mode="stretch_width",
    )
    return layout, redraw


def spread_data() -> dict:
    """Return, per offered sigma, the three histograms, their x range and the numbers table."""
    out = []
    for sigma in SIGMAS:
        cases = [case(kind, sigma) for kind in ("heavy", "uniform", "fixed")]
        top = histogram_top(cases)
        out.append(
            {
                "top": top,
                "hist": {c.kind: histogram(c.lengths, top) for c in cases},
                "table": spread_table(cases, sigma),
            }
        )
    return {"sigmas": list(SIGMAS), "at": out}


def spread_section():
    """Return exercise 2: the sigma slider swaps precomputed histograms and numbers."""
    sources = {kind: ColumnDataSource(histogram(case(kind, 1.2).lengths, 1)) for kind in ("heavy", "uniform", "fixed")}
    plots = spread_plots(sources, 1.2)
    sigma = Slider(
        title="Spread: log-normal sigma (heavy-tailed)",
        name="spread-sigma",
        start=SIGMAS[0],
        end=SIGMAS[-1],
        step=0.1,
        value=1.2,
        width=320,
    )
    table = _div(name="spread-table")
    redraw = CustomJS(
        args=dict(
            data_json=json.dumps(spread_data(), separators=(",", ":")),
            sigma=sigma,
            sources=sources,
            histograms=plots.histograms,
            cursor=plots.cursor,
            table=table,
        ),
        code=_code("spread"),
    )
    sigma.js_on_change("value", redraw)
    layout = column(
        _div(
            "<h3>Exercise 2: when continuous batching stops paying</h3><p>The same arrivals three times, with "
            "heavy-tailed, uniform and fixed output lengths (the same intended mean, 64 tokens).</p>"
        ),
        sigma,
        row(*plots.histograms.values(), sizing_mode="stretch_width"),
        table,
        plots.curve,
        _div(SPREAD_WHY),
        sizing_mode="stretch_width",
    )
    return layout, redraw


def temperature_section():
    """Return exercise 3: the bug's checkbox swaps the two precomputed states."""
    sources = [ColumnDataSource(d) for d in rows_data(CORRECT)]
    figures = temperature_plots(sources)
    bug = Checkbox(
        label="Inject the bug: one temperature (the first row's) for the whole batch", name="temperature-bug"
    )
    draws = _div(draws_html(CORRECT), name="temperature-draws")
    states = {
        "off": {"rows": rows_data(CORRECT), "html": draws_html(CORRECT)},
        "on": {"rows": rows_data(BUGGY), "html": draws_html(BUGGY)},
    }
    redraw = CustomJS(
        args=dict(data_json=json.dumps(states), bug=bug, sources=sources, draws=draws), code=_code("temperature")
    )
    bug.js_on_change("active", redraw)
    layout = column(
        _div(
            "<h3>Exercise 3: one temperature for the whole batch</h3><p>One batch of three requests with different "
            "sampling over fixed logits, from the core's sampler (outlined: the distribution each row asked "
            "for).</p>"
        ),
        bug,
        row(*figures, sizing_mode="stretch_width"),
        draws,
        _div(TEMPERATURE_WHY),
        sizing_mode="stretch_width",
    )
    return layout, redraw
