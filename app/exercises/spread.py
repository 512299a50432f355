"""Exercise 2, when continuous batching stops paying: heavy-tailed, uniform and fixed lengths on the same arrivals."""

from __future__ import annotations

import html
from functools import lru_cache

import numpy as np
import panel as pn
import param

from app.exercises.charts import BAR_COLOR, REFERENCE_COLOR, Charts, bars_series, charts_payload
from app.page import palette
from app.page.tabs import LazyViewer, query_number, text_pane
from app.server.loop import on_document
from app.server.server_log import follow_widget
from app.web.style import CHOICE_CSS
from core.chapter.spread import SIGMA_RANGE, SPREAD_SLOTS, SPREAD_TRAFFIC, SpreadCase, spread_case
from core.workload.traffic import LENGTH_KINDS

SIGMAS = tuple(round(x, 1) for x in np.arange(SIGMA_RANGE[0], SIGMA_RANGE[1] + 0.05, 0.1))
BINS = 24
KIND_NAMES = {"heavy": "heavy-tailed", "uniform": "uniform", "fixed": "fixed"}
WHY = (
    "<p>With equal lengths every member of a static batch finishes together: there is no padding, and continuous "
    "batching only saves the wait for a batch boundary, so its ratio stays close to 1. The wider the spread, the "
    "longer each batch's longest member runs past the others, and the more continuous batching gains.</p>"
)

# The prediction asked before the ratios show: key -> (option, length kind, sigma of the heavy-tailed lengths).
GUESSES = {
    "fixed": ("Fixed: every answer the same length", "fixed", 0.0),
    "uniform": ("Uniform: lengths spread evenly around the mean", "uniform", 0.0),
    "narrow": ("Heavy-tailed, narrow: sigma 0.5", "heavy", 0.5),
    "wide": ("Heavy-tailed, wide: sigma 2.0", "heavy", 2.0),
}


@lru_cache(maxsize=3 * len(SIGMAS))
def case(kind: str, sigma: float) -> SpreadCase:
    """Return one kind's case at a sigma (only heavy-tailed lengths depend on it); shared by every session."""
    return spread_case(kind, sigma if kind == "heavy" else SPREAD_TRAFFIC.tail)


@lru_cache(maxsize=1)
def advantage_curve() -> dict[str, list[float]]:
    """Return the heavy-tailed drain ratio at every sigma the slider offers."""
    return {"sigma": list(SIGMAS), "ratio": [case("heavy", s).drain_ratio for s in SIGMAS]}


def guess_ratios() -> dict[str, float]:
    """Return each offered guess's static drain / continuous drain, from the core's runs."""
    return {key: case(kind, sigma).drain_ratio for key, (_, kind, sigma) in GUESSES.items()}


def best_guess() -> str:
    """Return the guess that keeps the most of continuous batching's advantage."""
    ratios = guess_ratios()
    return max(ratios, key=ratios.get)


def guess_html(guess: str) -> str:
    """Return whether `guess` was right and every option's ratio, best first (data-verdict, data-guess-ratio)."""
    ratios, best = guess_ratios(), best_guess()
    verdict = "right" if guess == best else "wrong"
    words = "Right." if verdict == "right" else "Not quite."
    rows = "".join(
        f'<li data-guess="{key}" data-guess-ratio="{ratio:.2f}">{html.escape(GUESSES[key][0])}: continuous drains '
        f"the queue <b>{ratio:.2f}x</b> sooner{' (your guess)' if key == guess else ''}</li>"
        for key, ratio in sorted(ratios.items(), key=lambda kv: -kv[1])
    )
    return (
        f'<div class="bv-verdict" data-verdict="{verdict}"><p><b>{words}</b> {html.escape(GUESSES[best][0])} '
        f"keeps the most of the advantage: the wider the spread, the longer each static batch waits for its "
        f"longest member.</p><ul>{rows}</ul></div>"
    )


def histogram(lengths: np.ndarray, top: int) -> dict[str, list]:
    """Return a histogram of output lengths over [0, top] in BINS bins."""
    counts, edges = np.histogram(lengths, bins=BINS, range=(0, top))
    return {"left": edges[:-1].tolist(), "right": edges[1:].tolist(), "count": counts.tolist()}


def histogram_specs(cases: list[SpreadCase]) -> list[dict]:
    """Return one histogram spec per kind, all over [0, the longest output] (each to its own tallest bar)."""
    top = histogram_top(cases)
    specs = []
    for c in cases:
        h = histogram(c.lengths, top)
        specs.append(
            {
                "id": f"spread-{c.kind}",
                "title": f"{KIND_NAMES[c.kind]} lengths",
                "y_label": "requests",
                "x_label": "output tokens",
                "height": 200,
                "x_range": [0, top],
                "y_range": [0, max(max(h["count"], default=0), 1) * 1.1],
                "series": [bars_series("count", h["left"], h["right"], h["count"], color=BAR_COLOR, edge="#FFFFFF")],
            }
        )
    return specs


def curve_spec(sigma: float) -> dict:
    """Return the heavy-tailed advantage against sigma, the other kinds as named reference lines, sigma marked."""
    data = advantage_curve()
    references = [
        {"id": kind, "y": case(kind, 0).drain_ratio, "color": REFERENCE_COLOR, "dash": dash,
         "legend": f"{KIND_NAMES[kind]} lengths ({case(kind, 0).drain_ratio:.2f}x)"}
        for kind, dash in (("uniform", "dashed"), ("fixed", "dotted"))
    ]  # fmt: skip
    low, high = SIGMA_RANGE
    return {
        "id": "spread-curve",
        "title": "How much sooner continuous batching drains, by spread",
        "y_label": "static drain / continuous drain",
        "x_label": "log-normal sigma of the heavy-tailed lengths",
        "height": 320,
        "legend": "below",
        "x_range": [low - 0.05, high + 0.05],
        "y_range": [0, max(data["ratio"]) * 1.15],
        "series": [
            {
                "id": "heavy",
                "label": "heavy-tailed, by sigma",
                "x": data["sigma"],
                "y": data["ratio"],
                "color": palette.CONTINUOUS_COLOR,
                "width": 3,
                "dots": 6,
            }
        ],  # fmt: skip
        "hlines": references,
        "vlines": [{"id": "sigma", "x": sigma, "color": "currentColor", "width": 2}],
    }


def histogram_top(cases: list[SpreadCase]) -> int:
    """Return the longest output among the cases: every histogram shares this x range."""
    return int(max(c.lengths.max() for c in cases))


def spread_table(cases: list[SpreadCase], sigma: float) -> str:
    """Return the three kinds' numbers as a table; each cell carries data-spread="kind-figure"."""
    cells = {
        "mean": ("mean output tokens", lambda c: f"{c.lengths.mean():.1f}"),
        "batch_ratio": ("static batch max/mean, median", lambda c: f"{np.median(c.batch_ratios):.2f}"),
        "batch_ratio_max": ("static batch max/mean, worst", lambda c: f"{c.batch_ratios.max():.2f}"),
        "padding": ("static padding share", lambda c: f"{c.padding_share:.0%}"),
        "drain_ratio": ("static drain / continuous drain", lambda c: f"{c.drain_ratio:.2f}x"),
    }
    head = "".join(f"<th>{KIND_NAMES[c.kind]}</th>" for c in cases)
    body = "".join(
        f'<tr><th scope="row">{label}</th>'
        + "".join(f'<td data-spread="{c.kind}-{key}">{fmt(c)}</td>' for c in cases)
        + "</tr>"
        for key, (label, fmt) in cells.items()
    )
    return (
        f'<table class="bv-h2h"><caption>{SPREAD_TRAFFIC.requests} requests over {SPREAD_TRAFFIC.arrival_window} '
        f"steps on {SPREAD_SLOTS} slots, the same arrivals for each (heavy-tailed: sigma {sigma:.1f})"
        f"</caption><thead><tr><th></th>{head}</tr></thead><tbody>{body}</tbody></table>"
    )


class SpreadView(LazyViewer):
    """Three length distributions side by side, and the heavy-tailed advantage as the spread shrinks."""

    sigma = param.Number(default=SPREAD_TRAFFIC.tail, bounds=SIGMA_RANGE, doc="Log-normal sigma of heavy lengths")
    guess = param.Selector(default=None, objects=list(GUESSES), allow_None=True, doc="The learner's prediction")
    revealed = param.Boolean(default=False, doc="The ratios are shown (after a guess)")

    def _build(self) -> None:
        self.numbers = text_pane("")
        self.histograms, self.curve = Charts(sizing_mode="stretch_width"), Charts(sizing_mode="stretch_width")
        self.slider = pn.widgets.FloatSlider(
            label="Spread: log-normal sigma (heavy-tailed)",
            start=SIGMA_RANGE[0],
            end=SIGMA_RANGE[1],
            step=0.1,
            value=self.sigma,
            width=320,
        )
        follow_widget(self.slider, "value_throttled", self, "sigma", lambda v: round(v, 1))
        self.param.watch(lambda e: setattr(self.slider, "value", e.new), "sigma")
        self.choice = pn.widgets.RadioBoxGroup(
            options={label: key for key, (label, _, _) in GUESSES.items()},
            value=None,
            sizing_mode="stretch_width",
            stylesheets=[CHOICE_CSS],
        )
        self.choice.value = None  # a radio group selects its first option unless told otherwise
        follow_widget(self.choice, "value", self, "guess")
        self.reveal_button = pn.widgets.Button(label="Reveal the ratios", color="primary", disabled=True)
        self.reveal_button.on_click(lambda _e: self.reveal())
        self.verdict = text_pane("")
        self.curve_pane = pn.Column(self.curve, sizing_mode="stretch_width")
        self.why = text_pane(WHY)
        self._refresh()
        self._show_reveal()
        self.param.watch(lambda *_e: on_document(self._refresh), "sigma")
        self.param.watch(lambda *_e: self._show_reveal(), ["guess", "revealed"])

    def reveal(self) -> None:
        """Show the ratios and say whether the guess was right; without a guess, nothing is shown."""
        if self.guess is not None:
            self.revealed = True

    def _show_reveal(self) -> None:
        self.reveal_button.disabled = self.guess is None or self.revealed
        self.choice.disabled = self.revealed
        self.verdict.object = guess_html(self.guess) if self.revealed else ""
        for part in (self.verdict, self.numbers, self.curve_pane, self.why):
            part.visible = self.revealed

    def cases(self) -> list[SpreadCase]:
        """Return the three cases at the current sigma."""
        sigma = round(self.sigma, 1)
        return [case(kind, sigma) for kind in LENGTH_KINDS]

    def apply_query(self, query: dict) -> list[str]:
        """Set the spread from `?sigma=`; return messages for what was refused."""
        value, message = query_number(query, "sigma", *SIGMA_RANGE, self.sigma)
        if value is not None:
            self.sigma = round(value, 1)
        return [message] if message else []

    def _refresh(self, *_events) -> None:
        cases = self.cases()
        self.histograms.payload = charts_payload(histogram_specs(cases))
        self.curve.payload = charts_payload([curve_spec(round(self.sigma, 1))])
        self.numbers.object = spread_table(cases, self.sigma)

    def _compose(self):
        return pn.Column(
            text_pane(
                "<h3>Exercise 2: when continuous batching stops paying</h3><p>The same arrivals three times, with "
                "heavy-tailed, uniform and fixed output lengths, each drawn around a mean of 64 tokens (a heavy "
                "tail's draw lands off it: the table gives each draw's own mean). Before you see "
                "the ratios: <b>which of these lengths keeps the most of continuous batching's advantage</b> (how "
                "many times sooner it drains the queue)?</p>"
            ),
            self.choice,
            self.reveal_button,
            self.verdict,
            self.slider,
            self.histograms,
            self.numbers,
            self.curve_pane,
            self.why,
            sizing_mode="stretch_width",
            css_classes=["bv-story"],
        )
