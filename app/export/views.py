"""The exported page's views: the served page's own view JSON for every setting the page carries, packed by place.

A place is what the story's buttons and the address load: the chapter's traffic, the worked example, a lesson, a
memory lesson, generated traffic at a seed, and on a clock the chapter's traffic, the worked example and generated
traffic at the lessons' seeds (`chapter@ms`, `generated@ms:7`). Each holds its view at slots 1-16, made by the
served page's own path (`widget.view_key`, `widget_data.view_json` in app/simulator) after the App's button press,
so the two pages draw from the same JSON.
Each place's views are gzipped together (views of one traffic share most of their text) and written as base64; the
page inflates a place when the learner reaches it (DecompressionStream).
"""

from __future__ import annotations

import base64
import gzip
import json
from dataclasses import dataclass
from functools import partial

from app.simulator import memory_lesson, story
from app.simulator.widget import SLIDER_SLOTS, view_key
from app.simulator.widget_data import view_json
from core import TrafficConfig

SLOTS = range(1, SLIDER_SLOTS + 1)
SEEDS = range(0, 100)  # the served seed slider's range (app/simulator/state.py)
LESSON_SEEDS = range(0, 31)  # a lesson's traffic at the claims grid's seeds (tests/test_page_claims.py)


@dataclass(frozen=True)
class Place:
    """What a button or a link loads: its name, the slots and step it opens on, and the seeds it carries."""

    name: str
    slots: int | None  # the slots the press sets (None: it keeps the learner's)
    step: int | None  # the step it opens on (None: it keeps the learner's where the window allows)
    seeds: tuple[int, ...] = ()  # a seeded place holds one pack per seed: `name:seed`


def pack(views: list[str]) -> str:
    """Return views (JSON texts) as one JSON array, gzipped and base64-encoded: what the page inflates."""
    text = "[" + ",".join(views) + "]"
    return base64.b64encode(gzip.compress(text.encode("utf-8"), compresslevel=9, mtime=0)).decode("ascii")


def unpack(packed: str) -> list[dict]:
    """Return the views of a pack (the inverse of `pack`, for tests and tools)."""
    return json.loads(gzip.decompress(base64.b64decode(packed)))


def export_views(
    config: TrafficConfig | None = None, window: int = 64, seeds=SEEDS, lesson_seeds=LESSON_SEEDS
) -> tuple[dict[str, str], dict]:
    """Return every pack by key (`chapter`, `generated:4`, …), and the places, what each button loads, the story.

    The served App is pressed as a learner would press its buttons, and each view comes from its own widget's key.
    `config`'s requests, lengths and arrival window shape generated traffic, as the served page's settings do.
    """
    app = served_app(config, window)
    story_parts, buttons = app.story(), app.chapter_widget.buttons
    packs: dict[str, str] = {}
    grab = partial(_grab, packs, app.chapter_widget)
    grab("chapter")
    grab("generated", tuple(seeds))
    places = {"chapter": Place("chapter", None, None), "generated": Place("generated", None, None, tuple(seeds))}
    actions: dict[str, list] = {"traffic": [], "lessons": [], "memory": [], "one_slot": [None]}
    app.press("traffic", 0)  # the worked example: its slots, timeout and window
    grab("worked")
    places["worked"] = Place("worked", app.state.slots, app.state.step)
    actions["traffic"] = ["worked", "chapter", "generated"]
    for index, key in enumerate(story.LESSONS):
        app.press("lessons", index)
        grab(key, tuple(lesson_seeds))
        places[key] = Place(key, app.state.slots, None, tuple(lesson_seeds))
        actions["lessons"].append(key)
    for index, key in enumerate(memory_lesson.lesson_buttons()):
        app.press("memory", index)
        name = f"memory-{key}"
        grab(name)
        places[name] = Place(name, app.state.slots, None)
        actions["memory"].append(name)
    places |= _clock_places(app, grab, config or TrafficConfig(), tuple(lesson_seeds))
    actions["clock"] = ["ms", "steps"]  # this page's own buttons (app/export/page.py CLOCK_BUTTONS)
    if len(app.actions["traffic"]) != len(actions["traffic"]):
        raise RuntimeError("the served page's traffic buttons changed: update app/export/views.py")
    return packs, {
        "places": {name: vars(p) | {"seeds": list(p.seeds)} for name, p in places.items()},
        "actions": actions,
        # Each memory lesson's pool, as the served page's address writes it (?kv_blocks=&allocation=).
        "memory": {f"memory-{key}": values for key, (_label, values) in memory_lesson.lesson_buttons().items()},
        "story": story_parts,
        "buttons": buttons,
    }


def _grab(packs: dict[str, str], widget, name: str, seeded: tuple[int, ...] = ()) -> None:
    """Pack the widget's views at slots 1-16 under `name` (one pack per seed where `seeded`), as its settings stand."""
    if seeded:
        for seed in seeded:
            packs[f"{name}:{seed}"] = pack([view_json(widget._key(slots=k, seed=seed)) for k in SLOTS])
    else:
        packs[name] = pack([view_json(widget._key(slots=k)) for k in SLOTS])


def _clock_places(app, grab, config: TrafficConfig, lesson_seeds: tuple[int, ...]) -> dict[str, Place]:
    """Pack the places the page carries on a clock and return them; the App is left on the step axis.

    On a clock (the default accelerator and model): the chapter's traffic, generated traffic at the lessons' seeds
    and the worked example, as the served page shows them after "On a clock"; a clock view is about four times a
    step view's size, so generated traffic carries the clock at fewer seeds than the step axis.
    """
    app.use_chapter_traffic()
    app.state.clock = "ms"
    grab("chapter@ms")
    # Generated traffic as the page's own settings make it (a lesson pressed before changed its lengths and window).
    app.state.param.update(requests=config.requests, lengths=config.lengths, arrival_window=config.arrival_window)
    grab("generated@ms", lesson_seeds)
    app.press("traffic", 0)
    grab("worked@ms")
    places = {
        "chapter@ms": Place("chapter@ms", None, None),
        "generated@ms": Place("generated@ms", None, None, lesson_seeds),
        "worked@ms": Place("worked@ms", app.state.slots, app.state.step),
    }
    app.state.clock = "steps"
    return places


def served_app(config: TrafficConfig | None = None, window: int = 64):
    """Return the served page's App on the chapter's traffic with `config`'s generator settings and `window`."""
    from app.shell import App  # the whole served page: imported here, as the CLI's other commands need none of it

    config = config or TrafficConfig()
    app = App()
    app.state.param.update(requests=config.requests, lengths=config.lengths, arrival_window=config.arrival_window)
    if window != app.state.window:
        app.state.window = window  # first: it bounds the step
        app.state.step = window - 1
    return app


def served_key(place: str, slots: int, seed: int | None = None):
    """Return the served page's view key for a place at `slots` (and `seed`), pressing its button as a learner would."""
    app = served_app()
    place, clock = place.split("@") if "@" in place else (place, "steps")
    if place == "worked":
        app.press("traffic", 0)
    elif place in story.LESSONS:
        app.press("lessons", list(story.LESSONS).index(place))
    elif place.startswith("memory-"):
        app.press("memory", list(memory_lesson.lesson_buttons()).index(place.removeprefix("memory-")))
    app.state.clock = clock
    overrides = {"slots": slots} if seed is None else {"slots": slots, "seed": seed}
    return view_key(app.state, app.chapter_widget._slots_end, **overrides)
