"""The exported page without a browser: its views are the served page's JSON, its links open, its story is served."""

import json
import re
from dataclasses import replace
from urllib.parse import parse_qs

import pytest

from app.export.page import LINK_KEYS, SERVED_ONLY, TABS, clock_buttons, export_story, offline_links, page_data
from app.export.views import LESSON_SEEDS, SLOTS, pack, served_key, unpack
from app.quiz.view import QUESTIONS, Quiz, quiz_data
from app.shell import App
from app.simulator import memory_lesson, story
from app.simulator.widget_data import view_json
from core import TrafficConfig, generate, simulate
from core.chapter import worked_example as worked
from core.chapter.chapter_traffic import chapter_traffic

LINK = re.compile(r'<a href="(\?[^"]*)"')
SEEDS = range(0, 3)  # a small page: the full one (seeds 0-99) is built by tests/browser/test_export.py
SMALL_LESSON_SEEDS = range(0, 2)


@pytest.fixture(scope="module")
def data():
    """What a page carrying seeds 0-2 (lessons 0-1) embeds, built as `batchviz export` builds it."""
    return page_data(seeds=SEEDS, lesson_seeds=SMALL_LESSON_SEEDS)


def _view(data, place: str, slots: int, seed: int | None = None) -> dict:
    key = place if seed is None or not data["places"][place]["seeds"] else f"{place}:{seed}"
    return unpack(data["packs"][key])[slots - 1]


CASES = [
    ("chapter", 4, None),
    ("chapter", 16, None),
    ("generated", 1, 0),
    ("generated", 9, 2),
    ("worked", 4, None),
    ("worked", 3, None),
    ("fixed-queued", 4, 1),
    ("heavy-queued", 2, 0),
    ("fixed-spread", 7, 1),
    ("memory-paged", 4, None),
    ("memory-tight", 5, None),
    ("memory-contiguous", 4, None),
    ("chapter@ms", 4, None),
    ("worked@ms", 4, None),
    ("chapter@ms", 11, None),
    ("generated@ms", 3, 1),  # generated after the lessons were pressed: the page's own generator, not a lesson's
]


@pytest.mark.parametrize("place,slots,seed", CASES)
def test_the_page_carries_the_served_pages_own_json(data, place, slots, seed):
    """Each view the page embeds is, byte for byte once parsed, what the served page sends after the same press."""
    want = json.loads(view_json(served_key(place, slots, seed)))
    assert _view(data, place, slots, seed) == want


def test_views_hold_the_cores_runs(data):
    """The chapter's traffic, generated traffic, the worked example (timeout 1) and a lesson: the core's runs."""
    cases = {
        ("chapter", None): (chapter_traffic(), 0),
        ("generated", 2): (generate(TrafficConfig(seed=2)), 0),
        ("worked", None): (worked.worked_example(), worked.BATCH_TIMEOUT),
        ("fixed-spread", 1): (generate(replace(TrafficConfig(seed=1), **story.LESSONS["fixed-spread"][1])), 0),
    }
    for (place, seed), (requests, timeout) in cases.items():
        for slots in (1, 4, 16):
            view = _view(data, place, slots, seed)
            assert view["ids"] == [r.id for r in requests]
            for mode in ("static", "continuous"):
                run = simulate(requests, slots, mode, timeout if mode == "static" else 0)
                got = view["runs"][mode]
                assert [got[k] for k in ("start", "finish", "slot", "release")] == [
                    a.tolist() for a in (run.start, run.finish, run.slot, run.release)
                ], (place, slots, mode)
    assert _view(data, "worked", 4)["window"] == worked.WINDOW and _view(data, "worked", 4)["worked"]
    assert _view(data, "worked", 3)["worked"] is None  # its figures are the four-slot schedule's
    assert _view(data, "chapter", 4)["generator"]  # moving the seed there shows generated traffic, as served


def test_every_place_and_seed_is_packed_once(data):
    """A pack per place, or per place and seed where the place has a seed; each holds slots 1-16 in order."""
    keys = set()
    for name, place in data["places"].items():
        keys |= {f"{name}:{seed}" for seed in place["seeds"]} if place["seeds"] else {name}
    assert keys == set(data["packs"])
    assert data["places"]["generated"]["seeds"] == list(SEEDS)
    assert all(data["places"][key]["seeds"] == list(SMALL_LESSON_SEEDS) for key in story.LESSONS)
    assert [v["slots"] for v in unpack(data["packs"]["chapter"])] == list(SLOTS)
    assert unpack(pack(['{"a":1}', '{"b":[2]}'])) == [{"a": 1}, {"b": [2]}]
    assert pack(['{"a":1}']) == pack(['{"a":1}'])  # the same page twice: no time stamp in the gzip


def test_the_buttons_load_what_the_served_buttons_load(data):
    """Each story button's place is where the served App's press goes: its traffic, its slots, the worked step."""
    app = App()
    assert data["buttons"] == {**app.chapter_widget.buttons, "clock": clock_buttons()}  # the clock: this page's
    assert {g: len(a) for g, a in data["actions"].items()} == {g: len(a) for g, a in app.actions.items()} | {"clock": 2}
    assert data["actions"]["lessons"] == list(story.LESSONS)
    assert data["actions"]["memory"] == [f"memory-{key}" for key in memory_lesson.lesson_buttons()]
    assert data["places"]["worked"] == {"name": "worked", "slots": worked.SLOTS, "step": worked.WINDOW - 1, "seeds": []}
    for key in story.LESSONS:
        assert data["places"][key]["slots"] == story.LESSON_SLOTS
    assert all(
        data["places"][f"memory-{key}"]["slots"] == memory_lesson.SLOTS for key in memory_lesson.lesson_buttons()
    )


def test_one_slot_is_identical_on_every_place_the_page_carries(data):
    """ONE_SLOT's claim, wherever the page goes: at one slot static and continuous run the same schedule."""
    for key in data["packs"]:
        view = unpack(data["packs"][key])[0]
        static, continuous = view["runs"]["static"], view["runs"]["continuous"]
        assert [static[k] for k in ("start", "finish", "slot")] == [continuous[k] for k in ("start", "finish", "slot")]


def _supported(link: str) -> bool:
    query = parse_qs(link.lstrip("?"))
    return set(query) <= LINK_KEYS and query.get("tab", ["simulator"])[-1] in TABS


def test_every_link_on_the_page_opens_offline(data):
    """The story's and the quiz's links all name views the page holds; links that need the server are text."""
    text = "".join(value for kind, value in data["story"] if kind == "html")
    links = LINK.findall(text) + [q.link for q in QUESTIONS]
    assert links and all(_supported(link) for link in links), [link for link in links if not _supported(link)]
    assert offline_links('<a href="?tab=knee">knee</a>') == '<a href="?tab=knee">knee</a>'
    assert offline_links('<a href="?clock=ms">on a clock</a>') == '<a href="?clock=ms">on a clock</a>'
    assert offline_links('<a href="?clock=ms&accelerator=a100-80gb">an A100</a>') == (
        'an A100 <span class="bv-served-only">(in the served app)</span>'
    )


def test_quiz_links_reach_carried_views():
    """Each "Show me" link's traffic is carried: a lesson at one of its seeds, the worked example, the chapter's."""
    lessons = {tuple(sorted(values.items())) for _label, values in story.LESSONS.values()}
    for q in QUESTIONS:
        query = {k: v[-1] for k, v in parse_qs(q.link.lstrip("?")).items()}
        traffic = {
            k: (int(v) if k == "arrival_window" else v) for k, v in query.items() if k in ("lengths", "arrival_window")
        }
        if traffic:
            assert tuple(sorted(traffic.items())) in lessons, q.key
            assert int(query.get("seed", TrafficConfig.seed)) in LESSON_SEEDS
        assert int(query.get("slots", 1)) in SLOTS


def test_quiz_data_is_the_served_quizs(data):
    """The page carries the served quiz's own data: each question's text, options, answer, why and view link."""
    assert data["quiz"] == quiz_data() == Quiz().data
    assert [d["key"] for d in data["quiz"]["questions"]] == [q.key for q in QUESTIONS]
    for d, q in zip(data["quiz"]["questions"], QUESTIONS):
        assert d["options"] == list(q.options) and d["answer"] == q.answer and d["why"] == q.why
        assert (d["link"], d["link_text"]) == (q.link, q.link_text)


def test_tabs_are_the_served_pages_tabs():
    """The page's tabs and their titles are the served page's, the Memory tab included."""
    from app.page.frame import TABS as SERVED

    assert TABS == SERVED


def test_the_memory_tab_carries_every_pool_its_slider_offers(data):
    """Every pool size's view is the served tab's JSON, and the huge-prompt lesson is there at every budget."""
    from app.memory.data import memory_json
    from app.memory.lesson import MAX_BLOCKS, MIN_BLOCKS
    from app.memory.view import BUDGETS, chunked_html

    tab = data["memory_tab"]
    assert unpack(tab["pools"]) == [json.loads(memory_json(b)) for b in range(MIN_BLOCKS, MAX_BLOCKS + 1)]
    assert tab["chunked"] == {str(b): chunked_html(b) for b in BUDGETS}


def test_the_story_is_the_served_story(data):
    """Part for part the served story: its texts (links that need the server named so), less the settings."""
    served = App().story()
    exported = data["story"]
    assert exported == export_story(served) and len(exported) == len(served)
    for (kind, value), (their_kind, theirs) in zip(served, exported):
        if kind == "disclosure":
            assert (their_kind, theirs) == ("html", SERVED_ONLY[value])
        elif kind == "row":
            assert theirs == [part for part in value if part[0] != "disclosure"] + [["buttons", "clock"]]
        elif kind == "html":
            assert theirs == offline_links(value)
        else:
            assert (their_kind, theirs) == (kind, value)


def test_the_exported_lineups_are_the_served_tabs_default_and_lessons():
    """Each lineup the page carries has the settings the served tab's default or lesson button loads."""
    from app.export.schedulers import lineup_keys
    from app.schedulers.view import SchedulersView

    keys = lineup_keys()
    view = SchedulersView()
    view.__panel__()
    assert keys["default"][1] == view.key()
    for button, (name, (label, key)) in zip(view.lesson_buttons, list(keys.items())[1:]):
        button.clicks += 1
        assert button.label == label and view.key() == key, name


@pytest.fixture(scope="module")
def knee_texts():
    """What the page carries for exercise 1 at the served view's own opening settings (its preset pair and rate)."""
    from app.exercises.knee_words import PAGE_RATE_PER_S
    from app.export.exercises import knee_data
    from core.clock.hardware import DEFAULT_ACCELERATOR, DEFAULT_MODEL_SHAPE

    data = knee_data([DEFAULT_ACCELERATOR], [DEFAULT_MODEL_SHAPE], [PAGE_RATE_PER_S])
    return data, unpack(data["at"][f"{DEFAULT_ACCELERATOR}/{DEFAULT_MODEL_SHAPE}/{PAGE_RATE_PER_S:g}"])[0]


def _shown(data: dict, at: dict, target: float, guess: int | None) -> dict:
    """Return what app/web/export/export_knee.js shows from the page's data at a target and guess."""
    i, revealed = data["targets"].index(target), guess is not None
    words = at["guesses"][at["best"][i]][data["batches"].index(guess)] if revealed else ""
    return {
        "verdict": at["verdicts"][i] + words + data["tail"] if revealed else data["ask"],
        "table": (at["tables"][i] if revealed else "") + at["assumptions"],
        "moves": at["moves"][i] if revealed else "",
        "load": at["load"],
        "motivation": at["motivation"],
        "points": at["points"],
    }


def test_the_knee_carries_what_the_served_view_shows_at_every_target(knee_texts):
    """At every target the served slider offers, before a guess and after each, the served view's own panes."""
    from app.exercises.knee import KneeView

    data, at = knee_texts
    view = KneeView()
    view.__panel__()
    assert data["targets"] == [float(t) for t in range(5, 201)]  # the served slider's 5-200 ms in steps of 1
    for target, guess in [(50.0, None), *((t, 64) for t in data["targets"]), *((30.0, b) for b in data["batches"])]:
        view.param.update(itl_target_ms=target, guess=guess)
        served = {
            "verdict": view.verdict.object,
            "table": view.table.object,
            "moves": view.moves.object,
            "load": view.load.object,
            "motivation": view.motivation.object,
            "points": json.loads(view.charts.payload)["points"],
        }
        assert _shown(data, at, target, guess) == served, (target, guess)


def test_the_spread_and_the_temperature_bug_carry_what_the_served_views_show():
    """Every sigma's figures and table, each guess's verdict, each test's verdict and both samplers: as served."""
    from app.exercises.spread import GUESSES, SIGMAS, SpreadView
    from app.exercises.temperature import ASSERTIONS, TemperatureView
    from app.export.exercises import spread_data, temperature_data

    spread, view = spread_data(), SpreadView()
    view.__panel__()
    for sigma, at in zip(SIGMAS, unpack(spread["at"])):
        view.sigma = sigma
        assert at == {"histograms": view.histograms.payload, "curve": view.curve.payload, "table": view.numbers.object}
    for key, verdict in zip(GUESSES, spread["verdicts"]):
        view.param.update(guess=key, revealed=False)
        view.reveal()
        assert view.verdict.object == verdict, key
    temperature, view = temperature_data(), TemperatureView()
    view.__panel__()
    for k, verdict in enumerate(temperature["verdicts"]):
        view.run_test(k)
        assert view.verdict.object == verdict and view.demo.visible, ASSERTIONS[k]
    for bug, state in ((False, "off"), (True, "on")):
        view.bug = bug
        assert temperature[state] == {"charts": view.charts.payload, "draws": view.draws.object}


def test_the_exercise_sections_hold_the_served_views_words_and_controls():
    """Each section opens with the served view's words and offers its controls' labels and ranges."""
    from app.exercises.knee import INTRO
    from app.export.exercises import exercise_sections, served_views

    sections, views = exercise_sections(), served_views()
    assert INTRO in sections["knee"] and 'name="knee-target" min="5" max="200" step="1" value="50"' in sections["knee"]
    assert views["spread"].__panel__().objects[0].object in sections["spread"]
    assert 'name="spread-sigma" min="0.1" max="2" step="0.1" value="1.2"' in sections["spread"]
    assert views["temperature"].__panel__().objects[0].object in sections["temperature"]
    assert f">{views['temperature'].run_button.name}</button>" in sections["temperature"]
