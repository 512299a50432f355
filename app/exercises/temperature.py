"""Exercise 3, one temperature for the whole batch: each row's distribution and draws, with the bug on or off."""

from __future__ import annotations

import html

import numpy as np
import panel as pn
import param

from app.exercises.charts import BAR_COLOR, Charts, bars_series, charts_payload
from app.page.tabs import LazyViewer, text_pane
from app.page.url import BOOLEANS, query_value
from app.server.loop import on_document
from app.web.style import CHOICE_CSS
from core.chapter.temperature_bug import DRAWS, ROWS, VOCAB, TemperatureResult, row_logits, run_rows

CORRECT, BUGGY = run_rows(bug=False), run_rows(bug=True)  # fixed logits and seeds: the same for every session
WHY = (
    "<p>A batched sampler must take every row's parameters from that row. Dividing the whole batch's logits by the "
    "first row's temperature is a one-line bug: every row samples at the first row's temperature, so each row that "
    "asked for another one (the greedy row among them) stops sampling as it asked. Nothing crashes; outputs just "
    "stop being what each request asked for.</p>"
)

# The test to write: four candidate assertions over one run of the batched sampler, exactly as the page shows them.
# `draws[s, i]` is row i's token at step s, `probs[i]` the distribution row i sampled from, `logits[i]` its logits.
ASSERTIONS = (
    "assert draws.shape == (DRAWS, len(ROWS))",
    "assert np.allclose(probs.sum(axis=1), 1.0)",
    "assert len(set(draws[:, 0])) > 1  # row 0 samples",
    "assert (draws[:, 1] == logits[1].argmax()).all()  # greedy row",
)

ROW_NAMES = "; ".join(f"row {i}: {label}" for i, (label, _) in enumerate(ROWS))


def run_assertion(code: str, bug: bool) -> bool:
    """Return whether `code` passes when run on the sampler's output, the buggy one if `bug` else the fixed one."""
    result = BUGGY if bug else CORRECT
    names = {"np": np, "draws": result.draws, "probs": result.probs, "logits": row_logits(), "DRAWS": DRAWS}
    try:
        exec(code, {**names, "ROWS": ROWS})  # only ever one of ASSERTIONS, never typed text
    except AssertionError:
        return False
    return True


def catches_bug(code: str) -> bool:
    """Return whether the assertion catches the bug: it fails on the buggy sampler and passes on the fixed one."""
    return run_assertion(code, bug=False) and not run_assertion(code, bug=True)


def assertion_html(code: str) -> str:
    """Return the assertion's result on both samplers and whether it catches the bug (data-pass, data-catches)."""
    cells = "".join(
        f'<tr><th scope="row">{name}</th><td data-sampler="{key}" data-pass="{int(ok)}">'
        f"{'passes' if ok else 'fails'}</td></tr>"
        for key, name, ok in (
            ("fixed", "fixed sampler (core/batch/sampling.py, each row its temperature)", run_assertion(code, False)),
            ("buggy", "buggy sampler (the first row's temperature for all)", run_assertion(code, True)),
        )
    )
    catches = catches_bug(code)
    words = (
        "<b>This test catches the bug:</b> it passes on the fixed sampler and fails on the buggy one."
        if catches
        else "<b>This test does not catch the bug:</b> a test that catches it must fail on the buggy sampler and "
        "pass on the fixed one. Try another."
    )
    return (
        f'<div class="bv-verdict" data-verdict="{"right" if catches else "wrong"}" data-catches="{int(catches)}">'
        f'<table class="bv-h2h bv-assert-table"><caption><code>{html.escape(code)}</code></caption><tbody>{cells}'
        f"</tbody></table><p>{words}</p></div>"
    )


def row_specs(result: TemperatureResult) -> list[dict]:
    """Return one bar chart spec per row: the distribution it samples from, outlined by the one it asked for."""
    tokens = np.arange(VOCAB)
    lefts, rights = (tokens - 0.4).tolist(), (tokens + 0.4).tolist()
    return [
        {
            "id": f"temperature-row{i}",
            "title": f"row {i}: {label}",
            "y_label": "probability",
            "x_label": "token id",
            "height": 260,
            "legend": "below",
            "x_range": [-0.5, VOCAB - 0.5],
            "x_ticks": list(range(0, VOCAB, 5)),
            "y_range": [0, 1.05],
            "series": [
                bars_series(
                    "p", lefts, rights, result.probs[i].tolist(), color=BAR_COLOR, label="what the row samples from"
                ),
                # The row's own distribution, outlined: with the bug on, the gap between bars and outline is the bug.
                bars_series(
                    "correct",
                    lefts,
                    rights,
                    CORRECT.probs[i].tolist(),
                    color="currentColor",
                    outline=True,
                    label="its own temperature's (outlined)",
                ),
            ],  # fmt: skip
        }
        for i, (label, _) in enumerate(ROWS)
    ]


def rows_data(result: TemperatureResult) -> list[dict[str, list]]:
    """Return each row's bar data: the distribution sampled from and the one the row asked for."""
    return [
        {"token": list(range(VOCAB)), "p": result.probs[i].tolist(), "correct": CORRECT.probs[i].tolist()}
        for i in range(len(ROWS))
    ]


def draws_html(result: TemperatureResult) -> str:
    """Return the changed-rows counter and each row's draws (data-draws, data-distinct for tests)."""
    changed = result.changed_rows(CORRECT)
    rows = "".join(
        f'<tr data-row="{i}"><th scope="row">{html.escape(label)}</th>'
        f'<td class="bv-draws" data-draws="{",".join(map(str, result.draws[:, i]))}">'
        f"{' '.join(map(str, result.draws[:, i]))}</td>"
        f'<td data-distinct="{len(np.unique(result.draws[:, i]))}">{len(np.unique(result.draws[:, i]))}</td></tr>'
        for i, (label, _) in enumerate(ROWS)
    )
    return (
        f'<p class="bv-counter">Rows that changed behaviour: <b data-changed="{len(changed)}">{len(changed)} of '
        f"{len(ROWS)}</b>.</p>"
        f'<table class="bv-h2h"><caption>{DRAWS} draws per row, each row with its own seeded generator</caption>'
        f"<thead><tr><th>row</th><th>tokens drawn</th><th>distinct</th></tr></thead><tbody>{rows}</tbody></table>"
    )


class TemperatureView(LazyViewer):
    """Three rows with their own sampling over fixed logits; a toggle applies the first row's temperature to all."""

    bug = param.Boolean(default=False, doc="Apply the batch's first temperature to every row")

    def _build(self) -> None:
        self.charts = Charts(sizing_mode="stretch_width")
        self.toggle = pn.widgets.Checkbox.from_param(
            self.param.bug, label="Inject the bug: one temperature (the first row's) for the whole batch"
        )
        self.draws = text_pane("")
        self.choice = pn.widgets.RadioBoxGroup(
            options={code: k for k, code in enumerate(ASSERTIONS)},
            value=None,
            sizing_mode="stretch_width",
            stylesheets=[CHOICE_CSS],
            css_classes=["bv-code-choice"],
        )
        self.choice.value = None  # a radio group selects its first option unless told otherwise
        self.run_button = pn.widgets.Button(label="Run it on both samplers", color="primary", disabled=True)
        self.choice.param.watch(lambda e: setattr(self.run_button, "disabled", e.new is None), "value")
        self.run_button.on_click(lambda _e: self.run_test(self.choice.value))
        self.verdict = text_pane("")
        self.demo = pn.Column(
            text_pane("<h3>What the bug does</h3>"),
            self.toggle,
            self.charts,
            self.draws,
            text_pane(WHY),
            sizing_mode="stretch_width",
            visible=self.bug,  # a deep link to the bug (?bug=1) shows it; otherwise the question comes first
        )
        self._refresh()
        self.param.watch(lambda *_e: on_document(self._refresh), "bug")

    def run_test(self, index: int | None) -> None:
        """Run the chosen assertion on both samplers and show the verdicts, then what the bug does."""
        if index is None:
            return
        self.verdict.object = assertion_html(ASSERTIONS[index])
        self.demo.visible = True

    def result(self) -> TemperatureResult:
        """Return the rows' distributions and draws for the toggle's setting."""
        return BUGGY if self.bug else CORRECT

    def apply_query(self, query: dict) -> list[str]:
        """Set the bug from `?bug=1`; return messages for what was refused."""
        if "bug" not in query:
            return []
        text = query_value(query["bug"]).strip().lower()
        if text in BOOLEANS:
            self.bug = BOOLEANS[text]
            return []
        return [f"URL: bug={text[:40]!r} is not allowed (use 1 or 0); kept {int(self.bug)}."]

    def _refresh(self, *_events) -> None:
        result = self.result()
        self.charts.payload = charts_payload(row_specs(result))
        self.draws.object = draws_html(result)

    def _compose(self):
        return pn.Column(
            text_pane(
                "<h3>Exercise 3: one temperature for the whole batch</h3><p>One batch of three requests with "
                f"different sampling over fixed logits, from the core's sampler ({ROW_NAMES}). The bug divides "
                "every row's logits by the first row's temperature. <b>Which test catches it?</b> Each line runs "
                f"on {DRAWS} draws of the batch: "
                "<code>draws[s, i]</code> is row i's token at draw s, <code>probs[i]</code> the distribution row i "
                "sampled from, <code>logits[i]</code> its logits.</p>"
            ),
            self.choice,
            self.run_button,
            self.verdict,
            self.demo,
            sizing_mode="stretch_width",
            css_classes=["bv-story"],
        )
