"""The view's JSON contract (app/web/view.schema.json): every view the pages draw from holds to it, and it can fail."""

from __future__ import annotations

import copy
import json

import jsonschema
import pytest

from app.simulator.state import SimState
from app.simulator.widget import view_key
from app.simulator.widget_data import view_json
from app.web.bundle import ASSETS
from core.chapter import worked_example as worked
from core.chapter.chapter_traffic import chapter_traffic

SCHEMA = json.loads((ASSETS / "view.schema.json").read_text(encoding="utf-8"))
VALIDATOR = jsonschema.Draft202012Validator(SCHEMA)
CASES = {  # SimState settings a learner reaches: traffic, slots, pools, clocks, priority classes
    "chapter": {"trace": chapter_traffic(), "trace_name": "the chapter's traffic"},
    "worked": {
        "trace": worked.worked_example(),
        "trace_name": "the chapter's worked example",
        "slots": 4,
        "batch_timeout": worked.BATCH_TIMEOUT,
        "window": worked.WINDOW,
    },  # fmt: skip
    "seed0-1": {"seed": 0, "slots": 1},
    "seed30-8": {"seed": 30, "slots": 8},
    "fixed-queued": {"lengths": "fixed", "arrival_window": 1},
    "paged-10": {"seed": 4, "kv_blocks": 10, "window": 96},
    "contiguous-14": {"seed": 4, "kv_blocks": 14, "allocation": "contiguous"},
    "too-big-to-draw": {"seed": 4, "requests": 300, "slots": 32, "window": 40, "kv_blocks": 1000},
    "classes": {"seed": 3, "requests": 24, "priority_share": 30, "slots": 2},
    "clock": {"seed": 4, "clock": "ms"},
    "clock-worked": {"trace": worked.worked_example(), "trace_name": "w", "clock": "ms", "window": worked.WINDOW},
    "long-window": {"seed": 4, "requests": 300, "slots": 32, "window": 200},
}


def _view(settings: dict) -> dict:
    return json.loads(view_json(view_key(SimState(**settings), 16)))


def _check(view: dict) -> list[str]:
    """Return what is wrong with a view: the schema's errors, then the lengths the schema cannot say."""
    errors = [f"{'/'.join(map(str, e.absolute_path))}: {e.message}" for e in VALIDATOR.iter_errors(view)]
    if errors:
        return errors
    n = len(view["ids"])
    for name in ("arrival", "prompt", "output", "priority"):
        if len(view[name]) != n:
            errors.append(f"{name} has {len(view[name])} entries for {n} requests")
    for policy, run in view["runs"].items():
        for name in ("start", "finish", "slot", "release"):
            if len(run[name]) != n:
                errors.append(f"runs/{policy}/{name} has {len(run[name])} entries for {n} requests")
        if run["drain"] != max(run["finish"], default=0):
            errors.append(f"runs/{policy}/drain is not the last finish")
        if len(run.get("kv", [])) > view["window"]:
            errors.append(f"runs/{policy}/kv runs past the window")
        if len(run.get("log", [])) % 8 or len(run.get("waits", [])) % 2 or len(run.get("cells", [])) % 5:
            errors.append(f"runs/{policy}: a flat record is cut short")
        if run.get("pool_at") is not None and len(run["pool_at"]) % run["pool"]:
            errors.append(f"runs/{policy}/pool_at is not whole steps of the pool")
        if (view["pool"] is None) == ("pool" in run):
            errors.append(f"runs/{policy}: the pool's facts go with a limited pool only")
    if view["clock"] == "ms" and len(view["arrival_ms"]) != n:
        errors.append("arrival_ms is not one time per request")
    if not set(view["h2h"]["pair"]) <= set(view["runs"]):
        errors.append("the head-to-head names a policy with no run")
    for mode, run in view["runs"].items():  # each mode's full head-to-head is of the two runs it shows
        versus = run["traits"]["versus"]
        shown = [mode, versus] if run["traits"]["forms_batches"] else [versus, mode]
        full = view["h2h"] if mode in ("static", "continuous") else view["h2h_by"].get(mode)
        if full is None or full["pair"] != shown:
            errors.append(f"the full head-to-head in mode {mode} is not of its two runs {shown}")
    return errors


@pytest.mark.parametrize("name", list(CASES))
def test_every_view_holds_to_the_contract(name):
    """The view of each setting validates against the schema, and its arrays have the lengths it promises."""
    assert _check(_view(CASES[name])) == []


def test_the_exported_pages_views_hold_to_it_too():
    """The exported page embeds the same views: a lesson's and a memory lesson's from its packs validate."""
    from app.export.views import served_key

    for place, seed in (("fixed-spread", 3), ("memory-tight", None), ("generated", 99)):
        assert _check(json.loads(view_json(served_key(place, 5, seed)))) == [], place


BREAKS = [
    ("a missing field", lambda v: v.pop("here")),
    ("an unknown field", lambda v: v.update(shade=1)),
    ("a clock of furlongs", lambda v: v.update(clock="furlongs")),
    ("a float step", lambda v: v["runs"]["continuous"]["start"].__setitem__(0, 1.5)),
    ("a run one request short", lambda v: v["runs"]["static"]["finish"].pop()),
    ("a per-step array past the window", lambda v: v["runs"]["static"].update(kv=[0] * (v["window"] + 1))),
    ("a decision record cut short", lambda v: v["runs"]["continuous"].update(log=[1, 2, 3])),
    ("a head-to-head row of three", lambda v: v["h2h"]["rows"][0].pop()),
    ("shortest first's head-to-head of static and continuous", lambda v: v["h2h_by"].update(sjf=v["h2h"])),
    ("clock fields on the step axis", lambda v: v.update(end_ms=3.0)),
    ("a bad key", lambda v: v.update(key="not-a-fingerprint")),
]


@pytest.mark.parametrize("what, breaks", BREAKS, ids=[b[0] for b in BREAKS])
def test_the_contract_refuses_a_broken_view(what, breaks):
    """Each way of breaking a good view is caught, by the schema or by the lengths it promises."""
    view = copy.deepcopy(_view(CASES["paged-10"]))
    assert _check(view) == []
    breaks(view)
    assert _check(view) != [], what
