"""Per-step text for playback: computed once in Python so the browser only indexes by step (no round trip)."""

from __future__ import annotations

import html
from functools import lru_cache

import numpy as np

from core import GENERATING, IDLE, PADDING, Run


def _cumulative_cells(grid: np.ndarray, state: int) -> np.ndarray:
    """Return, for t = 0..width, how many cells of `state` lie in steps [0, t)."""
    return np.concatenate([[0], np.cumsum((grid == state).sum(axis=0))])


def stats_html(completed: int, total: int, useful: int, utilisation: float, avg_latency: float | None) -> str:
    """Return the live-stats block; each number carries a data-stat attribute for tests and assistive tech."""
    latency = "–" if avg_latency is None else f"{avg_latency:.1f}"
    items = [
        ("completed", "Completed", f"{completed}/{total}"),
        ("useful_tokens", "Useful tokens", f"{useful}"),
        ("utilisation", "GPU utilisation", f"{utilisation:.0%}"),
        ("avg_latency", "Avg latency of those completed (steps)", latency),
    ]
    cells = "".join(
        f'<div class="bv-stat"><div class="bv-stat-label">{label}</div>'
        f'<div class="bv-stat-value" data-stat="{key}">{value}</div></div>'
        for key, label, value in items
    )
    return f'<div class="bv-stats">{cells}</div>'


def progress_table(run: Run, window: int) -> dict[str, list[str]]:
    """Return, for each step t = 0..window-1, the readout, live stats, waste meter and decision-log texts.

    Step t is the pass at the cursor: the stats and the waste meter count steps 0..t, the log says what was decided
    before step t ran (what the lit loop shows), and the readout states that meaning once.
    """
    grid = run.grid(window)
    useful, padding, idle = (_cumulative_cells(grid, state) for state in (GENERATING, PADDING, IDLE))
    latency = run.finish - run.arrival
    order = np.argsort(run.finish, kind="stable")
    finish_sorted, latency_sorted = run.finish[order], latency[order]
    latency_cum = np.concatenate([[0], np.cumsum(latency_sorted)])
    table: dict[str, list[str]] = {"readout": [], "stats": [], "waste": [], "log": []}
    for t in range(window):
        ran = t + 1  # steps 0..t have run
        done = int(np.searchsorted(finish_sorted, ran, side="right"))
        avg = latency_cum[done] / done if done else None
        util = useful[ran] / (ran * run.slots)
        table["readout"].append(
            f'<span class="bv-step" data-step="{t}">step {t}</span>'
            f'<span class="bv-step-note"> of 0–{window - 1}: the figures below count steps 0–{t}</span>'
        )
        table["stats"].append(stats_html(done, len(run.requests), int(useful[ran]), util, avg))
        table["waste"].append(
            f'<span class="bv-waste">Waste so far: <b data-waste="padding">{padding[ran]}</b> padding + '
            f'<b data-waste="idle">{idle[ran]}</b> idle slot-steps</span>'
        )
        table["log"].append(html.escape(run.describe_step(t)))
    return table


@lru_cache(maxsize=256)
def playback_texts(run: Run, window: int) -> tuple[str, ...]:
    """Return the per-step HTML blocks of a run over a window; runs are shared between sessions, so are these."""
    return tuple(playback_panel(progress_table(run, window)))


def playback_panel(table: dict[str, list[str]]) -> list[str]:
    """Return, per step, the readout, stats, waste meter and decision log as one HTML block.

    Playback swaps this one block per frame: each Bokeh Div update costs a re-layout (about 5 ms here), so one
    block instead of four keeps playback near 30 frames per second.
    """
    return [
        f'<div class="bv-readout">{r}</div>{s}<div class="bv-waste-row">{w}</div><div class="bv-log">{g}</div>'
        for r, s, w, g in zip(table["readout"], table["stats"], table["waste"], table["log"])
    ]
