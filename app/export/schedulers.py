"""The exported page's Schedulers tab: the default lineup and each lesson's, computed in advance with their words."""

from __future__ import annotations

import json

from app.schedulers.command import command_html
from app.schedulers.data import LineupKey, budget_of, lineup_json, shared_lineup
from app.schedulers.intro import INTRO, LESSONS, legend_html
from app.schedulers.view import DEFAULT_ENTRIES
from app.schedulers.words import guess_html, lessons_html, load_html, table_html
from core.clock.hardware import cost_model
from core.measure.lineup import parse_entries

DEFAULT_LABEL = "Four engines on chat traffic"


def lineup_keys() -> dict[str, tuple[str, LineupKey]]:
    """Return the lineups the page carries: the tab's default and each lesson's settings, by key."""
    keys = {"default": (DEFAULT_LABEL, LineupKey(parse_entries(",".join(DEFAULT_ENTRIES))))}
    for name, (label, values) in LESSONS.items():
        values = dict(values)
        values.pop("question", None)  # what the guess asks, not what runs
        entries = parse_entries(",".join(values.pop("entries")))
        keys[name] = (label, LineupKey(entries, **values))
    return keys


def export_lineups() -> dict:
    """Return each lineup's view (the renderer's JSON), its question, a verdict per guess, its table and lessons."""
    out = {}
    for name, (label, key) in lineup_keys().items():
        lines = shared_lineup(key)
        question = LESSONS[name][1].get("question", "ttft_p99") if name in LESSONS else "ttft_p99"
        out[name] = {
            "label": label,
            "view": json.loads(lineup_json(key)),
            "options": [line.entry.label() for line in lines],
            "load": load_html(lines, *budget_of(key)),
            "ask": guess_html(lines, None, question),
            "verdicts": [guess_html(lines, k, question) for k in range(len(lines))],
            "table": table_html(lines, key.ttft_ms, key.itl_ms) + command_html(key),
            "lessons": lessons_html(lines, cost_model(key.accelerator, key.model)),
        }
    return out


def lineup_panel() -> str:
    """Return the tab's HTML around what the module fills in (the lineup buttons, the guess, the timelines)."""
    return (
        f'<div class="bv-story">{INTRO}<p>On this page the tab carries the default lineup and each lesson\'s, '
        "computed in advance (the served page runs any lineup you pick).</p></div>"
        '<div class="bv-choices" role="group" aria-label="Lineup" id="bv-lineup-choices"></div>'
        '<div id="bv-lineup-load"></div><div id="bv-lineup-ask"></div>'
        '<div class="bv-choices" role="group" aria-label="Your guess" id="bv-lineup-guesses"></div>'
        '<div id="bv-lineup-table"></div><div id="bv-lineup-lessons"></div>'
        f"{legend_html()}"
        '<div id="bv-lineup-timelines" class="bv-lineup"></div>'
    )
