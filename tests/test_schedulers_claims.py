"""The Schedulers tab's legend, opening and computed sentences (issue 47), each checked against the runs on screen."""

import itertools

import numpy as np

from app.page import palette
from app.schedulers.data import LineupKey, drawn_cells, shared_lineup
from app.schedulers.intro import LEGEND, LESSONS
from core.measure.lineup import parse_entries
from core.states import IDLE, PADDING, STATE_NAMES

# Machado, Oliveira and Fernandes (2009): full protanopia, deuteranopia and tritanopia, on linear RGB.
VISION = {
    "normal": np.eye(3),
    "protan": np.array(
        [[0.152286, 1.052583, -0.204868], [0.114503, 0.786281, 0.099216], [-0.003882, -0.048116, 1.051998]]
    ),
    "deutan": np.array(
        [[0.367322, 0.860646, -0.227968], [0.280085, 0.672501, 0.047413], [-0.011820, 0.042940, 0.968881]]
    ),
    "tritan": np.array(
        [[1.255528, -0.076749, -0.178779], [-0.078411, 0.930809, 0.147602], [0.004733, 0.691367, 0.303900]]
    ),
}


def _lab(colour: str, vision: np.ndarray) -> np.ndarray:
    """Return a #RRGGBB colour as CIELAB (D65), as an eye with `vision` sees it."""
    srgb = np.array([int(colour[k : k + 2], 16) for k in (1, 3, 5)]) / 255
    linear = np.where(srgb <= 0.04045, srgb / 12.92, ((srgb + 0.055) / 1.055) ** 2.4)
    rgb = np.clip(vision @ linear, 0, 1)
    xyz = np.array([[0.4124, 0.3576, 0.1805], [0.2126, 0.7152, 0.0722], [0.0193, 0.1192, 0.9505]]) @ rgb
    t = xyz / np.array([0.95047, 1.0, 1.08883])
    f = np.where(t > 0.008856, np.cbrt(t), 7.787 * t + 16 / 116)
    return np.array([116 * f[1] - 16, 500 * (f[0] - f[1]), 200 * (f[1] - f[2])])


def seen_apart(a: str, b: str) -> float:
    """Return the least CIELAB distance between two colours over normal vision and the three full dichromacies."""
    return min(float(np.linalg.norm(_lab(a, m) - _lab(b, m))) for m in VISION.values())


def _states_drawn(key: LineupKey) -> set[str]:
    """Return the names of the cell states in the lineup's runs, as recorded and as drawn, idle and padding too."""
    states = {STATE_NAMES[IDLE]}
    for line in shared_lineup(key):
        run = line.run
        if run.schedule is not None and len(run.schedule.cells):
            states |= {STATE_NAMES[s] for s in run.schedule.cells[:, 4].tolist()}
            states |= {STATE_NAMES[s] for s in drawn_cells(run.schedule.cells)[:, 4].tolist()}
        if (run.release_ms > run.finish_ms).any():  # a run without cells: its padding, from finish to release
            states.add(STATE_NAMES[PADDING])
    return states


def _lesson_key(name: str, **values) -> LineupKey:
    settings = dict(LESSONS[name][1])
    settings.pop("question")
    return LineupKey(parse_entries(",".join(settings.pop("entries"))), **(settings | values))


LEGEND_KEYS = [
    LineupKey(parse_entries("vllm,tgi,sglang,trtllm-no-evict")),
    *(_lesson_key(name) for name in LESSONS),
    LineupKey(parse_entries("static,tgi:prefill_chunking=0,sglang,trtllm-max-util"), kv_blocks=600, seed=4),
]


def test_every_state_the_tabs_runs_draw_has_a_legend_entry_and_no_two_entries_share_a_colour():
    """Issue 47, item 1: paused wore padding's orange, and static's hatched padding had no entry.

    Every state in the tab's runs (default, each lesson's, static beside pausing and preempting engines on a tight
    pool) has an entry; no two entries share a colour; and a colour-blind eye keeps the states apart (paused most
    of all: it sat on the hatching's colour for a protanope).
    """
    covered = {state for states, *_ in LEGEND for state in states}
    seen = set().union(*(_states_drawn(key) for key in LEGEND_KEYS))
    assert {"paused", "padding", "recompute", "generating", "idle"} <= seen
    assert seen <= covered, seen - covered
    colours = [colour.upper() for _states, _words, colour, _mark, _style in LEGEND]
    assert len(set(colours)) == len(colours)
    # A state's colours as drawn: padding's hatching too.
    drawn = {states: [colour] + ([palette.PADDING_HATCH] if "padding" in states else [])
             for states, _words, colour, _mark, _style in LEGEND if states}  # fmt: skip
    for (a, ca), (b, cb) in itertools.combinations(drawn.items(), 2):
        apart = min(seen_apart(x, y) for x in ca for y in cb)
        assert apart >= (30 if "paused" in a + b else 15), (a, b, apart)
