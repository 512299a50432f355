"""The exported page's pieces without a browser: its table is the core's, its links open, its claims hold there."""

import re
from urllib.parse import parse_qs

import pytest

from app import chapter, story
from app.export import (
    SLOTS,
    TABS,
    h2h_cells,
    h2h_template,
    lesson_config,
    offline_links,
    precompute_all,
    story_html,
)
from app.quiz import QUESTIONS, explanation_html, questions_data
from app.views import _h2h_table, h2h_rows
from core import TrafficConfig, compute_metrics, generate, simulate
from core import worked_example as worked
from core.chapter_traffic import chapter_traffic
from core.losses import losses

LINK = re.compile(r'<a href="(\?[^"]*)"')


@pytest.fixture(scope="module")
def table():
    """The page's whole table on a small generated traffic (the fixed traffics are the page's own)."""
    return precompute_all(TrafficConfig(requests=5))


def _unflatten(flat: list[int]) -> list[list[int]]:
    n = len(flat) // 4
    return [flat[k * n : (k + 1) * n] for k in range(4)]


def test_fixed_traffics_hold_the_cores_runs(table):
    """The chapter's traffic, the worked example (timeout 1) and each lesson: every (mode, slots) run is the core's."""
    cases = {
        "chapter": (chapter_traffic(), 0),
        "worked": (worked.worked_example(), worked.BATCH_TIMEOUT),
        **{key: (generate(lesson_config(key)), 0) for key in story.LESSONS},
    }
    for name, (requests, timeout) in cases.items():
        fixed = table["fixed"][name]
        assert fixed["ids"] == [r.id for r in requests] and fixed["prompt"] == [r.prompt_tokens for r in requests]
        for slots in (1, 4, 16):
            for mode in ("static", "continuous"):
                run = simulate(requests, slots, mode, timeout if mode == "static" else 0)
                assert _unflatten(fixed["runs"][mode][slots - 1]) == [
                    a.tolist() for a in (run.start, run.finish, run.slot, run.release)
                ], (name, slots, mode)
    assert table["fixed"]["worked"]["window"] == worked.WINDOW and not table["fixed"]["worked"]["generator"]
    assert table["fixed"]["chapter"]["generator"]  # moving the seed there shows generated traffic, as served


def test_lessons_are_the_served_pages_lessons():
    """A lesson's traffic is the served page's default traffic with the lesson's settings (tests/test_page_claims)."""
    for key, (_label, values) in story.LESSONS.items():
        config = lesson_config(key)
        assert config.seed == TrafficConfig().seed and all(getattr(config, k) == v for k, v in values.items())


def _rebuilt(cells: str, template: dict) -> str:
    """Rebuild the full table as assets/export_glue.js does: the placeholders filled, the completed-only row made."""
    parts = cells.split("|")
    only, done = template["keys"].index(None), template["keys"].index("completed")
    for j, policy in enumerate(("static", "continuous")):
        completed = parts[2 * done + j].split("/")[0]
        parts[2 * only + j] = (
            f'<span data-h2h="{policy}-avg_latency">{parts[2 * only + j]}</span> '
            f'<span class="bv-of">of {completed}</span>'
        )
    return re.sub(r"\{\{(\d+)\}\}", lambda m: parts[int(m.group(1))], template["html"])


@pytest.mark.parametrize("seed,slots", [(0, 1), (4, 4), (7, 8), (99, 16)])
def test_head_to_head_cells_rebuild_the_served_table(seed, slots):
    """The compact cells and the template give back app/views.py's full table, character for character."""
    requests = generate(TrafficConfig(seed=seed))
    static, continuous = simulate(requests, slots, "static"), simulate(requests, slots, "continuous")
    rows = h2h_rows(
        compute_metrics(static, 64), compute_metrics(continuous, 64), losses(static, 64), losses(continuous, 64)
    )
    assert _rebuilt(h2h_cells(static, continuous, 64), h2h_template(len(requests), 64)) == _h2h_table(rows)


def test_one_slot_is_identical_on_every_traffic_the_page_shows(table):
    """ONE_SLOT's claim, on each precomputed traffic: at one slot static and continuous run the same schedule."""
    for name, fixed in table["fixed"].items():
        assert fixed["runs"]["static"][0] == fixed["runs"]["continuous"][0], name
    for seed, (s, c) in enumerate(
        zip(table["generated"]["runs"]["static"][0], table["generated"]["runs"]["continuous"][0])
    ):
        assert s == c, seed
    for seed in range(100):  # and on the default export's generated traffic, every seed
        requests = generate(TrafficConfig(seed=seed))
        assert (
            simulate(requests, 1, "static").timeline_strings() == simulate(requests, 1, "continuous").timeline_strings()
        )


def _supported(link: str) -> bool:
    query = parse_qs(link.lstrip("?"))
    keys = {"tab", "preset", "mode", "slots", "seed", "step", "lengths", "arrival_window"}
    return set(query) <= keys and query.get("tab", ["simulator"])[-1] in TABS


def test_every_link_on_the_page_opens_offline():
    """The story's and the quiz's links all name views the page holds; the clock and Memory links are text."""
    text = story_html(batch=True)
    links = LINK.findall(text) + [q.link for q in QUESTIONS]
    assert links and all(_supported(link) for link in links), [link for link in links if not _supported(link)]
    assert "?clock=ms" not in text and "?tab=memory" not in text
    assert text.count('class="bv-served-only"') == 4
    assert offline_links('<a href="?tab=knee">knee</a>') == '<a href="?tab=knee">knee</a>'
    assert offline_links('<a href="?clock=ms">on a clock</a>') == (
        'on a clock <span class="bv-served-only">(in the served app)</span>'
    )


def test_quiz_links_reach_precomputed_views():
    """Each "Show me" link's traffic is in the table: the lesson, the worked example, the chapter's traffic."""
    lessons = {tuple(sorted(values.items())) for _label, values in story.LESSONS.values()}
    for q in QUESTIONS:
        query = {k: v[-1] for k, v in parse_qs(q.link.lstrip("?")).items()}
        traffic = {
            k: (int(v) if k == "arrival_window" else v) for k, v in query.items() if k in ("lengths", "arrival_window")
        }
        if traffic:
            assert tuple(sorted(traffic.items())) in lessons, q.key
        assert int(query.get("slots", 1)) in SLOTS


def test_quiz_data_is_the_served_quizs():
    """questions_data carries the questions and, per option, the served quiz's own explanation."""
    data = questions_data()
    assert [d["key"] for d in data] == [q.key for q in QUESTIONS]
    for d, q in zip(data, QUESTIONS):
        assert d["options"] == list(q.options) and d["answer"] == q.answer and d["link"] == q.link
        assert d["explanations"] == [explanation_html(q, k) for k in range(len(q.options))]


def test_tabs_are_the_served_pages_tabs():
    """The page's tabs and their titles are the served page's, less the Memory tab (it needs its engine)."""  # noqa
    from app.simulator import TABS as SERVED

    assert TABS == {key: title for key, title in SERVED.items() if key != "memory"}


def test_story_is_in_the_served_order():
    """The story's parts appear in app/simulator.py's order, each from the served page's own string."""
    text = story_html(batch=True)
    parts = [
        story.WHY,
        chapter.restructured_loop_html(),
        chapter.build_batch_html(),
        story.SPREAD,
        chapter.spread_argument_html(),
        story.ONE_SLOT,
        offline_links(chapter.affordable_html()),
        offline_links(story.NOT_FIXED),
        chapter.PRODUCTION,
        chapter.run_locally_html(),
        offline_links(chapter.WHATS_NEXT),
    ]
    at = [text.index(part) for part in parts]
    assert at == sorted(at)
    assert chapter.build_batch_html() not in story_html(batch=False)


def test_the_exported_lineups_are_the_served_tabs_default_and_lessons():
    """Each lineup the page carries has the settings the served tab's default or lesson button loads."""
    from app.export_lineup import lineup_keys
    from app.lineup_view import LineupView

    keys = lineup_keys()
    view = LineupView()
    view.__panel__()
    assert keys["default"][1] == view.key()
    for button, (name, (label, key)) in zip(view.lesson_buttons, list(keys.items())[1:]):
        button.clicks += 1
        assert button.label == label and view.key() == key, name
