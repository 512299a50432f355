"""The exported page, opened from file:// with every network request blocked, draws and says what the core computes."""

import json
import re
import subprocess
import sys
from dataclasses import replace
from urllib.parse import parse_qs

import numpy as np
import param
import pytest
from playwright.sync_api import expect

from app.exercises.knee import verdict_html
from app.exercises.knee_words import keeps_up_html, kept_full, load_html, offered_tokens_per_s
from app.exercises.spread import GUESSES, best_guess
from app.exercises.temperature import ASSERTIONS, catches_bug
from app.export.page import LINK_KEYS, SERVED_ONLY, export_story
from app.export.views import served_key
from app.page.frame import CHAPTER_BUTTON
from app.page.frame import TABS as TABS_SERVED
from app.quiz.view import QUESTIONS
from app.shell import App
from app.simulator import memory_lesson, story
from app.simulator.state import CHAPTER_NAME, SimState, shared_runs
from app.simulator.widget_data import view_json
from core import TrafficConfig, compute_metrics, generate, simulate
from core.chapter import worked_example as worked
from core.chapter.chapter_traffic import chapter_traffic
from core.chapter.spread import spread_study
from core.clock.hardware import cost_model
from core.measure.sweep import DEFAULT_BATCHES, decode_knee, knee, sweep
from core.sched.policies import get_policy
from tests.oracles import loop_view
from tests.oracles.batch_view import BatchView
from tests.oracles.quiz_view import explanation_html, progress_html, summary_html

from .helpers import CHART_JS, assert_numbers_match_core, core_run, open_full_head_to_head, text_of
from .pixels import read_timeline
from .test_accessibility import contrast

# The page's server has shown the first view, and each exercise has drawn its first setting.
READY = "document.body.dataset.ready === '1' && document.querySelectorAll('[data-exercise][data-ready]').length === 3"
# The browser's own serialisation of a Python-built fragment, to compare with what the page holds.
NORMALISED = "(html) => { const d = document.createElement('div'); d.innerHTML = html; return d.innerHTML; }"


@pytest.fixture(scope="module")
def exported(tmp_path_factory):
    """Write the page with the real CLI, in its own process (as a course author would)."""
    path = tmp_path_factory.mktemp("export") / "page.html"
    subprocess.run([sys.executable, "-m", "batchviz", "export", str(path)], check=True, capture_output=True)
    return path.as_uri()


@pytest.fixture
def offline(page):
    """Abort every request that is not the page file itself; fail if the page tried any."""
    attempted: list[str] = []

    def handle(route):
        if route.request.url.startswith("file:"):
            route.continue_()
        else:
            attempted.append(route.request.url)
            route.abort()

    page.route("**/*", handle)
    failed: list[str] = []
    page.on("requestfailed", lambda request: failed.append(request.url))
    yield attempted + failed
    assert attempted == [] and failed == [], f"the page tried to load {attempted + failed}"


def _open(page, url: str) -> None:
    page.goto(url)
    page.wait_for_function(READY, polling=100, timeout=30_000)


def _both(page, slots: int, window: int = 64) -> tuple[list[str], list[str]]:
    # A place's views are inflated on first reach: read the pixels once every asked view is drawn.
    page.wait_for_function("window.__bvExport.idle()", polling=50, timeout=10_000)
    return read_timeline(page, slots, window), read_timeline(page, slots, window, name="timeline-other")


def _core_both(requests, mode: str, slots: int, timeout: int = 0, window: int = 64) -> tuple[list[str], list[str]]:
    other = get_policy(mode).versus  # the run drawn beneath: the one the mode is compared with
    return tuple(
        simulate(requests, slots, m, timeout if m == "static" else 0).timeline_strings(window) for m in (mode, other)
    )


def _press(page, name: str, key: str, times: int = 1) -> None:
    """Move a range input with the keyboard, as a learner would."""
    handle = page.locator(f"input[name={name}]")
    handle.focus()
    for _ in range(times):
        handle.press(key)


def _normalised(page, fragment: str) -> str:
    return page.evaluate(NORMALISED, fragment)


def lesson_config(key: str, seed: int = TrafficConfig.seed) -> TrafficConfig:
    """Return a lesson's traffic: the served page's default traffic with the lesson's settings (simulator/story.py)."""
    return replace(TrafficConfig(seed=seed), **story.LESSONS[key][1])


def _place(page) -> str:
    return page.evaluate("document.body.dataset.bvPlace")


def test_export_opens_on_the_chapters_traffic_and_follows_the_sliders(page, page_errors, offline, exported, artifacts):
    """Both timelines equal the core's runs: the chapter's traffic, then a seed and slots moved with the keyboard."""
    _open(page, exported)
    chapter_requests = chapter_traffic()
    assert _both(page, 4) == _core_both(chapter_requests, "continuous", 4)
    _press(page, "seed", "ArrowRight")  # the chapter's traffic gives way to generated traffic at seed 5
    assert _both(page, 4) == _core_both(generate(TrafficConfig(seed=5)), "continuous", 4)
    assert _place(page) == "generated"
    expect(page.locator(".bv-message")).to_contain_text("Now showing generated traffic (seed 5)")
    _press(page, "slots", "ArrowRight", 2)
    assert _both(page, 6) == _core_both(generate(TrafficConfig(seed=5)), "continuous", 6)
    page.locator("button[data-mode=static]").click()
    assert _both(page, 6) == _core_both(generate(TrafficConfig(seed=5)), "static", 6)
    page.get_by_role("button", name=CHAPTER_BUTTON).click()
    assert _both(page, 6) == _core_both(chapter_requests, "static", 6)
    page.screenshot(path=artifacts / "export-chapter-static-6.png", full_page=True)


def test_export_offers_sjf_and_priority(page, page_errors, offline, exported):
    """The exported page's mode choice holds sjf and priority: each drawn as the core schedules it, above continuous."""
    _open(page, exported + "?seed=6&slots=3")
    requests = generate(TrafficConfig(seed=6))
    page.locator("button[data-mode=sjf]").click()
    assert _both(page, 3) == _core_both(requests, "sjf", 3)
    sjf, fcfs = simulate(requests, 3, "sjf"), simulate(requests, 3, "continuous")
    assert sjf.start.tolist() != fcfs.start.tolist()  # the order changes who runs when
    latency = compute_metrics(sjf, 64).avg_latency_all
    for table in (".bv-h2h-compact", ".bv-h2h-full"):  # the first screen's, and every figure's (the same two runs)
        expect(page.locator(f"{table} [data-h2h=sjf-avg_latency_all]")).to_have_text(f"{latency:.1f}")
    page.locator("button[data-mode=priority]").click()
    assert _both(page, 3) == _core_both(requests, "priority", 3)
    # Every generated request is class 0 here, so the caption says priority runs as continuous batching, and why.
    expect(page.locator(".bv-caption").first).to_contain_text("every request here has the same priority")


def test_export_seed_moved_quickly_ends_on_the_last_value(page, page_errors, offline, exported):
    """Eight quick key presses: the final picture, stats and head-to-head are the final seed's (no stale frame)."""
    _open(page, exported + "?seed=0")
    _press(page, "seed", "ArrowRight", 8)
    expect(page.locator("output[data-value=seed]")).to_have_text("8")
    assert _both(page, 4) == _core_both(generate(TrafficConfig(seed=8)), "continuous", 4)
    assert_numbers_match_core(page, "continuous", 4, 8)


# (static, 8, 7) has utilisation exactly 12.5% and (static, 5, 1) an average latency of exactly 6.25: Python
# rounds such ties to even ("12%", "6.2"), JavaScript's toFixed rounds them up, and the page must say what the app says.
@pytest.mark.parametrize(
    "mode,slots,seed", [("static", 4, 4), ("continuous", 9, 5), ("static", 7, 12), ("static", 8, 7), ("static", 5, 1)]
)
def test_export_numbers_equal_the_core_metrics(page, page_errors, offline, exported, mode, slots, seed):
    """A deep link on the file URL: live stats and both head-to-head tables are the core's numbers, as served."""
    _open(page, exported + f"?mode={mode}&slots={slots}&seed={seed}")
    assert read_timeline(page, slots, 64) == core_run(mode, slots, seed).timeline_strings(64)
    assert_numbers_match_core(page, mode, slots, seed)
    m = {p: compute_metrics(core_run(p, slots, seed), 64) for p in ("static", "continuous")}
    for policy in ("static", "continuous"):  # the bars carry the table's numbers
        assert text_of(page, f"[data-bar={policy}-0] + span") == f"{policy}: {m[policy].completed}"


def test_export_playback_reveals_cells_in_order_and_follows_the_core(page, page_errors, offline, exported):
    """Start, step, play at 16 ms: the cells, stats, log, the loop and the batch at the cursor follow the core."""
    _open(page, exported + "?mode=static&seed=4")
    run = core_run("static", 4, 4)
    full, other_full = _core_both(generate(TrafficConfig(seed=4)), "static", 4)
    page.get_by_role("button", name="« Start (Go to step 0)").click()
    expect(page.locator(".bv-step")).to_have_text("step 0")
    for _ in range(5):
        page.get_by_role("button", name="Step ▸ (One step forward)").click()
    expect(page.locator(".bv-step")).to_have_text("step 5")
    assert _both(page, 4) == ([r[:6] + "-" * 58 for r in full], [r[:6] + "-" * 58 for r in other_full])
    assert text_of(page, "[data-stat=useful_tokens]") == str(compute_metrics(run, 6).useful_tokens)
    assert text_of(page, ".bv-log") == run.describe_step(5)
    assert page.inner_html(".bv-loop-box") == _normalised(page, loop_view.loop_texts(run, 64)[5])
    # Every painted step is recorded, to check playback never jumps back or skips the end.
    page.evaluate(
        """() => { window.__steps = []; const root = document.querySelector('.bv-widget-root');
             new MutationObserver(() => window.__steps.push(Number(root.dataset.step)))
               .observe(root, { attributes: true, attributeFilter: ['data-step'] }); }"""
    )
    page.locator("select[name=speed]").select_option(label="1 step/frame")
    page.get_by_role("button", name="▶ Play").click()
    expect(page.get_by_role("button", name="▶ Play")).to_be_visible(timeout=10_000)  # played to the end
    steps = page.evaluate("window.__steps")
    assert steps == sorted(steps) and steps[-1] == 63, steps
    assert _both(page, 4) == (full, other_full)
    assert text_of(page, ".bv-log") == run.describe_step(63)
    assert page.inner_html(".bv-loop-box") == _normalised(page, loop_view.loop_texts(run, 64)[63])


def test_export_pause_stops_on_a_step_the_core_agrees_with(page, page_errors, offline, exported):
    """Played slowly and paused: the revealed cells and the batch at the cursor are the core's at that step."""
    _open(page, exported + "?seed=4&step=5")
    page.evaluate("window.__bvInterval = 120")  # slow enough to pause mid-window
    page.get_by_role("button", name="▶ Play").click()
    expect(page.locator(".bv-step")).not_to_have_text("step 5", timeout=5000)
    page.get_by_role("button", name="❚❚ Pause").click()
    step = int(page.locator(".bv-step").get_attribute("data-step"))
    assert 5 < step < 63
    full = core_run("continuous", 4, 4).timeline_strings(64)
    assert read_timeline(page, 4, 64) == [row[: step + 1] + "-" * (63 - step) for row in full]
    state = SimState(seed=4, step=step)
    assert page.inner_html(".bv-batch-box") == _normalised(page, BatchView(state=state).html())


def test_export_has_the_worked_example(page, page_errors, offline, exported):
    """?preset=worked opens A-F (static timeout 1, a 24-step window) with its caption; a button goes back."""
    _open(page, exported + "?preset=worked&mode=static")
    requests = worked.worked_example()
    assert _both(page, worked.SLOTS, worked.WINDOW) == _core_both(
        requests, "static", worked.SLOTS, worked.BATCH_TIMEOUT, worked.WINDOW
    )
    static = simulate(requests, worked.SLOTS, "static", worked.BATCH_TIMEOUT)
    continuous = simulate(requests, worked.SLOTS, "continuous")
    assert text_of(page, "[data-stat=completed]") == "6/6"
    chapters = f"{compute_metrics(static, worked.WINDOW).avg_latency:.1f}"  # the first screen's table
    assert text_of(page, "[data-h2h=static-avg_latency_completed]") == chapters
    for key, value in worked.worked_figures(static, continuous).items():
        assert text_of(page, f"[data-worked={key}]") == str(value)
    expect(page.locator("input[name=seed]")).to_be_hidden()  # a fixed trace has no seed
    _press(page, "slots", "ArrowRight")
    assert _both(page, 5, worked.WINDOW) == _core_both(requests, "static", 5, worked.BATCH_TIMEOUT, worked.WINDOW)
    expect(page.locator(".bv-worked")).to_be_hidden()  # its figures are the four-slot schedule's
    page.get_by_role("button", name="Use generated traffic").click()
    assert _both(page, 5) == _core_both(generate(TrafficConfig(seed=4)), "static", 5)
    expect(page.locator(".bv-step")).to_have_text("step 63")


def test_export_views_are_the_served_pages_views(page, page_errors, offline, exported):
    """Every view the page draws is simulator/widget_data.py view_json for the served page's same settings, whole."""
    _open(page, exported)
    cases = [
        ("chapter", 4, 4),
        ("generated", 16, 99),
        ("generated", 1, 0),
        ("worked", 4, 4),
        ("fixed-spread", 7, 30),
        ("memory-tight", 4, 4),
    ]
    for place, slots, seed in cases:
        got = page.evaluate("([p, slots, seed]) => window.__bvExport.fresh(p, slots, seed)", [place, slots, seed])
        seeded = place == "generated" or place in story.LESSONS  # the others are fixed traffic
        want = json.loads(view_json(served_key(place, slots, seed if seeded else None)))
        assert got == want, place
    carried = page.evaluate("window.__bvExport.data.places")
    assert carried["generated"]["seeds"] == list(range(100)) and carried["fixed-spread"]["seeds"] == list(range(31))


def test_export_story_loop_and_batch_read_back_offline(page, page_errors, offline, exported):
    """The story is the served page's, in order; the loop and the batch at the cursor are Python's at the step."""
    _open(page, exported + "?step=20")
    text = page.inner_html("#bv-panel-simulator")
    positions = []
    for kind, value in export_story(App().story()):
        if kind == "html":
            assert _normalised(page, value) in text, value[:60]
            positions.append(text.index(_normalised(page, value)))
    assert positions == sorted(positions)  # in the served page's order
    assert page.locator("details[data-disclosure]").count() == 0  # the settings and the replay need the server
    assert page.locator("details.bv-code-details").count() == 2  # the loop's code and compare's output: shut, here
    expect(page.locator(".bv-served-only", has_text="the replay")).to_have_text(
        re.sub("<[^>]+>", "", SERVED_ONLY["replay"])
    )
    claims = page.eval_on_selector_all("#bv-panel-simulator [data-claim]", "els => els.map(e => e.dataset.claim)")
    assert {"gain-2-4x", "latency-lower", "one-slot-identical"} <= set(claims)
    state = SimState(trace=chapter_traffic(), trace_name=CHAPTER_NAME, step=20)
    assert page.inner_html(".bv-loop-box") == _normalised(page, loop_view.loop_texts(state.runs["continuous"], 64)[20])
    assert page.inner_html(".bv-batch-box") == _normalised(page, BatchView(state=state).html())
    page.locator("button[data-mode=static]").click()
    with param.parameterized.discard_events(state):
        state.mode = "static"
    assert page.inner_html(".bv-batch-box") == _normalised(page, BatchView(state=state).html())
    assert page.inner_html(".bv-loop-box") == _normalised(page, loop_view.loop_texts(state.runs["static"], 64)[20])


def test_export_hover_outlines_the_request_in_the_batch_view(page, page_errors, offline, exported):
    """Hovering a request in a timeline outlines its tokens and blocks in the batch at the cursor, as served."""
    _open(page, exported + "?step=3")
    x, y = page.evaluate("window.__bvWidget.timelines[0].cellCentre(0, 1)")  # the chapter's A, on slot 0
    page.mouse.move(x, y)
    expect(page.locator(".bv-batch-box [data-req=A]").first).to_have_css("outline-style", "solid")
    expect(page.locator(".bv-tip")).to_contain_text("request A")


def test_export_lessons_memory_and_one_slot_show_what_their_sentences_say(page, page_errors, offline, exported):
    """Each lesson's button loads its traffic (the core's runs) and keeps the seed; each memory lesson its pool.

    Fixed and queued, the two modes are identical; at slots = 1 too.
    """
    _open(page, exported)
    for key, (label, _values) in story.LESSONS.items():
        page.get_by_role("button", name=label).click()
        expect(page.locator("body")).to_have_attribute("data-bv-place", key)
        assert _both(page, 4) == _core_both(generate(lesson_config(key)), "continuous", 4), key
    _press(page, "seed", "ArrowLeft")  # a lesson keeps its seed control: the same lesson at seed 3
    expect(page.locator("output[data-value=seed]")).to_have_text("3")
    assert _both(page, 4) == _core_both(generate(lesson_config("fixed-spread", 3)), "continuous", 4)
    page.get_by_role("button", name=story.LESSONS["fixed-queued"][0]).click()
    top, other = _both(page, 4)
    assert top == other
    open_full_head_to_head(page)
    for row in ("completed", "utilisation", "avg_latency_all", "padding"):
        shown = text_of(page, f".bv-h2h-full [data-h2h=static-{row}]")
        assert shown and shown == text_of(page, f".bv-h2h-full [data-h2h=continuous-{row}]"), row
    page.get_by_role("button", name="Try slots = 1").click()
    top, other = _both(page, 1)
    assert top == other == simulate(generate(lesson_config("fixed-queued", 3)), 1, "static").timeline_strings(64)
    for key, (label, values) in memory_lesson.lesson_buttons().items():
        page.get_by_role("button", name=label).click()
        expect(page.locator("body")).to_have_attribute("data-bv-place", f"memory-{key}")
        runs = shared_runs(tuple(chapter_traffic()), memory_lesson.SLOTS, 0, values["kv_blocks"], values["allocation"])
        want = tuple(runs[m].timeline_strings(64) for m in ("continuous", "static"))
        drawn = page.evaluate("['continuous', 'static'].map((m) => window.__bvWidget.view.runs[m].start)")
        assert drawn == [runs[m].start.tolist() for m in ("continuous", "static")], key
        if "R" not in "".join(want[0] + want[1]):  # a recompute's colour is read by the memory page's own tests
            assert _both(page, memory_lesson.SLOTS) == want, key
        kv = page.evaluate("window.__bvWidget.view.runs.continuous.kv_peak")
        assert kv == int(runs["continuous"].schedule.blocks_by_step().max()), key  # the KV strip's scale


def test_export_in_app_links_open_in_place(page, page_errors, offline, exported):
    """?tab=knee links switch the tab without leaving the file; links that need the server are plain text."""
    _open(page, exported)
    links = page.eval_on_selector_all("#bv-panel-simulator a[href^='?']", "els => els.map(e => e.getAttribute('href'))")
    assert links and all(set(parse_qs(link[1:])) <= LINK_KEYS for link in links), links
    served_only = sum(v.count('class="bv-served-only"') for k, v in export_story(App().story()) if k == "html")
    assert page.locator("#bv-panel-simulator .bv-served-only").count() == served_only > 0
    page.evaluate("window.__stayed = true")
    page.locator("#bv-panel-simulator a[href='?tab=knee']").first.click()
    expect(page.get_by_role("tab", name="Exercise 1: the knee")).to_have_attribute("aria-selected", "true")
    expect(page.locator("#bv-section-knee")).to_be_visible()
    assert page.evaluate("window.__stayed") is True  # opened in place: the page was not loaded again
    expect(page).to_have_url(exported + "?tab=knee")  # and its address says where it is


def test_export_tabs_are_a_keyboard_tablist(page, page_errors, offline, exported):
    """?tab= selects a tab; arrows, Home and End move between tabs, and only the selected panel shows."""
    _open(page, exported + "?tab=temperature")
    expect(page.locator("#bv-section-temperature")).to_be_visible()
    expect(page.locator("#bv-panel-simulator")).to_be_hidden()
    tab = page.get_by_role("tab", name="Exercise 3: one temperature")
    tab.focus()
    tab.press("ArrowRight")
    memory = page.get_by_role("tab", name="Memory")
    expect(memory).to_be_focused()
    memory.press("ArrowRight")
    schedulers = page.get_by_role("tab", name="Schedulers")
    expect(schedulers).to_be_focused()
    expect(schedulers).to_have_attribute("aria-selected", "true")
    schedulers.press("ArrowRight")
    quiz = page.get_by_role("tab", name="Check yourself")
    expect(quiz).to_be_focused()
    quiz.press("Home")
    expect(page.get_by_role("tab", name="Simulator")).to_be_focused()
    expect(page.locator("#bv-panel-simulator")).to_be_visible()
    page.keyboard.press("End")
    expect(page.get_by_role("tabpanel", name="Check yourself")).to_be_visible()
    _open(page, exported + "?tab=nowhere")
    expect(page.locator(".bv-message")).to_contain_text("tab='nowhere' is not on this page")
    _open(page, exported + "?tab=constructor")  # a name every object inherits is no tab either
    expect(page.locator(".bv-message")).to_contain_text("tab='constructor' is not on this page")
    expect(page.locator("#bv-panel-simulator")).to_be_visible()


def test_export_quiz_scores_and_explains_offline(page, page_errors, offline, exported):
    """One question at a time: each verdict, the progress and the result are tests/oracles/quiz_view.py's markup."""
    _open(page, exported + "?tab=quiz")
    quiz = page.locator("#bv-quiz")
    answers: list[int | None] = [None] * len(QUESTIONS)
    for k, q in enumerate(QUESTIONS):
        choice = q.answer if k % 2 else (q.answer + 1) % len(q.options)  # right and wrong in turn
        assert quiz.locator(".bv-quiz-progress").evaluate("e => e.outerHTML") == _normalised(
            page, progress_html(k, answers)
        )
        expect(quiz.locator(".bv-question")).to_have_text(q.text)
        quiz.locator("input[type=radio]").nth(choice).check()
        quiz.get_by_role("button", name="Check my answer").click()
        answers[k] = choice
        assert quiz.locator(".bv-verdict").evaluate("e => e.outerHTML") == _normalised(
            page, explanation_html(q, choice)
        )
        expect(quiz.locator("input[type=radio]").first).to_be_disabled()  # the first checked answer is scored
        quiz.get_by_role("button", name="See your result" if k == len(QUESTIONS) - 1 else "Next question").click()
    assert quiz.locator(".bv-quiz-result").evaluate("e => e.outerHTML") == _normalised(page, summary_html(answers))
    assert quiz.locator(".bv-quiz-progress").evaluate("e => e.outerHTML") == _normalised(
        page, progress_html(len(QUESTIONS), answers)
    )


def test_export_quiz_show_me_opens_the_view_in_place(page, page_errors, offline, exported):
    """The "Show me" button opens the question's view (the worked example, static, step 15) and the answers stay."""
    _open(page, exported + "?tab=quiz")
    quiz = page.locator("#bv-quiz")
    quiz.get_by_role("button", name="Next question").click()  # question 2: padding, the worked example
    quiz.locator("input[type=radio]").first.check()
    quiz.get_by_role("button", name="Check my answer").click()
    quiz.get_by_role("button", name=f"Show me: {QUESTIONS[1].link_text}").click()
    expect(page.locator("#bv-panel-simulator")).to_be_visible()
    expect(page.locator(".bv-step")).to_have_text("step 15")
    full = simulate(worked.worked_example(), worked.SLOTS, "static", worked.BATCH_TIMEOUT)
    assert read_timeline(page, worked.SLOTS, worked.WINDOW) == [
        row[:16] + "-" * (worked.WINDOW - 16) for row in full.timeline_strings(worked.WINDOW)
    ]
    page.get_by_role("tab", name="Check yourself").click()
    expect(quiz.locator(".bv-verdict")).to_have_attribute("data-verdict", "right")


def _quiz_walk(quiz) -> list[str]:
    """Answer every question but the fourth, right and wrong in turn, see the result, go back two; the quiz at each."""
    seen = [quiz.evaluate("e => e.innerHTML")]
    for k, q in enumerate(QUESTIONS):
        if k != 3:
            choice = q.answer if k % 2 else (q.answer + 1) % len(q.options)
            quiz.get_by_label(q.options[choice], exact=True).check()
            quiz.get_by_role("button", name="Check my answer").click()
            expect(quiz.locator(".bv-verdict")).to_have_count(1)
        seen.append(quiz.evaluate("e => e.innerHTML"))
        quiz.get_by_role("button", name="See your result" if k == len(QUESTIONS) - 1 else "Next question").click()
    expect(quiz.locator("[data-final-score]")).to_have_count(1)
    seen.append(quiz.evaluate("e => e.innerHTML"))
    for n in (5, 4):
        quiz.get_by_role("button", name="Previous question").click()
        expect(quiz.locator(f".bv-question[data-question={QUESTIONS[n].key}]")).to_have_count(1)
        seen.append(quiz.evaluate("e => e.innerHTML"))
    return seen


def test_served_and_exported_quiz_are_one_module(page, page_errors, exported, app_url):
    """The same answers on both pages make the same quiz, element for element: both run app/web/tabs/quiz.js.

    On the served page a "Show me" that opens another tab (?tab=knee) and the way back draw the quiz anew, from the
    place and answers its model kept.
    """
    from .helpers import open_app

    walks = []
    for opened in ("served", "exported"):
        if opened == "served":
            open_app(page, app_url, "?tab=quiz", canvas=False)
        else:
            _open(page, exported + "?tab=quiz")
        quiz = page.locator(".bv-quiz").first  # the served one in its shadow root
        expect(quiz.locator(".bv-question")).to_have_count(1, timeout=15_000)
        walks.append(_quiz_walk(quiz))
        if opened == "served":
            assert QUESTIONS[4].link == "?tab=knee"
            quiz.get_by_role("button", name=f"Show me: {QUESTIONS[4].link_text}").click()
            expect(page.locator(".bv-tab.bv-active").first).to_have_text(TABS_SERVED["knee"], timeout=15_000)
            expect(page.locator(".bv-quiz")).to_have_count(0, timeout=15_000)  # the tab's view is gone
            page.locator(".bv-tab", has_text="Check yourself").first.click()
            expect(quiz.locator(f".bv-question[data-question={QUESTIONS[4].key}]")).to_have_count(1, timeout=15_000)
            assert quiz.evaluate("e => e.innerHTML") == walks[0][-1]
    served, exported_ = walks
    assert len(served) == len(QUESTIONS) + 4 and all("bv-quiz-progress" in html for html in served)
    assert served == exported_


@pytest.mark.parametrize("width", [390, 800])
def test_export_fits_a_phone_and_a_column(page, page_errors, offline, exported, width, artifacts):
    """At 390 px and in an 800 px column no tab scrolls the page sideways."""
    page.set_viewport_size({"width": width, "height": 844})
    _open(page, exported)
    for name in ("Simulator", "Exercise 1: the knee", "Exercise 2: length spread", "Exercise 3: one temperature",
                 "Memory", "Check yourself"):  # fmt: skip
        page.get_by_role("tab", name=name).click()
        page.wait_for_timeout(200)
        sizes = page.evaluate("[document.scrollingElement.scrollWidth, window.innerWidth]")
        assert sizes[0] <= sizes[1], (name, sizes)
    page.get_by_role("tab", name="Simulator").click()
    # The head-to-head's bar labels keep their words whole ("continuo" / "us: 11" at 390 px, a learner's read).
    broken = page.evaluate("""() => [...document.querySelectorAll('#bv-panel-simulator .bv-bar-text')].flatMap((el) => {
      const words = el.textContent.split(/\\s+/), probe = document.createElement('span');
      probe.style.whiteSpace = 'nowrap';
      el.appendChild(probe);
      const wide = words.filter((w) => { probe.textContent = w; return probe.offsetWidth > el.clientWidth + 0.5; });
      probe.remove();
      return el.offsetParent && wide.length ? [el.textContent] : [];
    })""")
    assert page.locator("#bv-panel-simulator .bv-bar-text").count() >= 6 and broken == [], broken
    page.screenshot(path=artifacts / f"export-{width}.png", full_page=True)


def _knee_table(page) -> dict[int, dict[str, str]]:
    rows = page.locator(".bv-knee-table tr[data-batch]")
    out = {}
    for k in range(rows.count()):
        cells = rows.nth(k).locator("td[data-col]")
        out[int(rows.nth(k).get_attribute("data-batch"))] = {
            cells.nth(j).get_attribute("data-col"): cells.nth(j).inner_text() for j in range(cells.count())
        }
    return out


def test_export_exercises_equal_the_core(page, page_errors, offline, exported):
    """From file://: the knee at a preset, rate and target, the spread at a sigma, the bug's counter: the core's."""
    _open(page, exported + "?tab=knee")
    expect(page.locator("[data-guess=ask]").first).to_be_visible()  # the guess comes first
    assert page.locator("[data-knee]").count() == 0 and page.locator(".bv-knee-table").count() == 0
    _knee_settings(page, {"knee-accelerator": "a100-80gb", "knee-model": "llama3-8b", "knee-rate": "80"}, 30, 64)
    points = sweep(80.0, DEFAULT_BATCHES, cost_model("a100-80gb", "llama3-8b"), itl_target_ms=30)
    # The offered load against each batch size kept full, as the served page says it (80/s floods every batch size).
    load = re.sub(r"<[^>]+>", "", load_html(80.0, cost_model("a100-80gb", "llama3-8b"), tuple(points)))
    expect(page.locator(".bv-load").first).to_have_text(load)
    assert "faster than any batch size serves them" in load
    best, decode = knee(points), decode_knee(points)
    expect(page.locator("[data-knee]").first).to_have_attribute("data-knee", str(best.batch) if best else "none")
    model = cost_model("a100-80gb", "llama3-8b")
    full = dict(kept_full(model))
    keeps_up = keeps_up_html(best.batch, offered_tokens_per_s(80.0), full, best.one_run) if best else ""
    assert not best or "does not keep up" in keeps_up  # 80/s floods every batch size: the verdict says it of the knee
    served = re.sub(r"<[^>]+>", "", verdict_html(best, decode, 30, 64, keeps_up))  # the served sentence, as text
    expect(page.locator(".bv-knee").first).to_have_text(served)
    # The figures are the served page's modules on the same columns: read back from the SVG through its axes.
    drawn = page.evaluate(CHART_JS, "knee-itl")
    assert {k: round(v) for k, v in drawn["vlines"].items()} == {
        **({"knee": best.batch} if best else {"no-knee": 1}),
        **({"decode-knee": decode.batch} if decode else {}),
    }
    clock = [v for _, v in drawn["series"]["clock"]]
    assert np.allclose(clock, [p.itl_p99_ms for p in points], atol=max(p.itl_p99_ms for p in points) * 1.3 / 500)
    table = _knee_table(page)
    for p in points:
        assert table[p.batch] == {
            "step_ms": f"{p.step_ms:.1f}",
            "decode_itl_p99_ms": f"{p.decode_itl_p99_ms:.1f}",
            "itl_p99_ms": f"{p.itl_p99_ms:.1f}",
            "tokens_per_s": f"{p.tokens_per_s:.0f}",
            "p99_latency_s": f"{p.p99_latency_ms / 1e3:.2f}",
            "p99_admitted_s": f"{p.p99_admitted_ms / 1e3:.2f}",
        }
    page.get_by_role("tab", name="Exercise 2: length spread").click()
    spread = page.locator("#bv-section-spread")
    # The guess before the ratios, as served: nothing of them shows until a guess is revealed.
    expect(spread.locator("[data-spread]").first).to_be_hidden()
    expect(spread.get_by_role("button", name="Reveal the ratios")).to_be_disabled()
    key = list(GUESSES)[2]
    spread.get_by_label(GUESSES[key][0], exact=True).check()
    spread.get_by_role("button", name="Reveal the ratios").click()
    expect(spread.locator(f"[data-guess={key}]")).to_contain_text("(your guess)")
    verdict = "right" if key == best_guess() else "wrong"
    expect(spread.locator("[data-verdict]")).to_have_attribute("data-verdict", verdict)
    expect(spread.get_by_role("button", name="Reveal the ratios")).to_be_disabled()
    expect(spread.get_by_label(GUESSES[key][0], exact=True)).to_be_disabled()  # the first guess revealed is kept
    spread.locator("input[name=spread-sigma]").fill("0.5")
    for c in spread_study(0.5):
        expect(spread.locator(f"[data-spread={c.kind}-drain_ratio]")).to_have_text(f"{c.drain_ratio:.2f}x")
    page.get_by_role("tab", name="Exercise 3: one temperature").click()
    temperature = page.locator("#bv-section-temperature")
    run = temperature.get_by_role("button", name="Run it on both samplers")
    expect(run).to_be_disabled()
    expect(temperature.locator("[data-changed]")).to_be_hidden()  # the question comes first, as served
    expect(temperature.locator("[data-changed]")).to_have_attribute("data-changed", "0")
    code = next(c for c in ASSERTIONS if catches_bug(c))
    temperature.get_by_label(code, exact=True).check()
    run.click()
    expect(temperature.locator("[data-catches]")).to_have_attribute("data-catches", "1")
    temperature.get_by_label("Inject the bug", exact=False).check()
    expect(temperature.locator("[data-changed]")).to_have_attribute("data-changed", "2")


def _knee_settings(page, selects: dict[str, str], target: int, guess: int) -> None:
    """Choose the knee's presets and rate, move its target slider and press a guess, as a learner would."""
    for name, value in selects.items():
        page.locator(f"select[name={name}]").select_option(value)
    page.locator("input[name=knee-target]").fill(str(target))
    page.locator(".bv-knee-guess button", has_text=re.compile(rf"^{guess}$")).click()
    want = {"knee-accelerator": "h100-sxm", "knee-model": "llama2-7b", "knee-rate": "14"} | selects  # the defaults
    shown = "/".join([*want.values(), str(target), str(guess)])
    expect(page.locator("[data-exercise=knee]")).to_have_attribute("data-shown", shown)  # drawn once inflated


# What each exercise shows, by the selectors both pages' views write (app/exercises/): compared element for element.
EXERCISE_PARTS = {
    "knee": (".bv-motivation", ".bv-load", "p.bv-knee", ".bv-knee-table", ".bv-moves", ".bv-latency-words"),
    "spread": (".bv-verdict", "table:has([data-spread])"),
    "temperature": ("[data-catches]", ".bv-counter", "table:has([data-draws])"),
}


def _exercise_parts(page, tab: str) -> list[str]:
    return [page.locator(selector).first.evaluate("e => e.outerHTML") for selector in EXERCISE_PARTS[tab]]


# Each chart's SVG once its box is 900 px wide on either page (the served page draws inside shadow roots): both pages
# draw with app/web/charts/, so the same payload at the same width is the same markup.
SVG_AT_900 = """async (ids) => {
  const deep = (root, sel) => root.querySelector(sel) ?? [...root.querySelectorAll("*")]
    .map((el) => el.shadowRoot && deep(el.shadowRoot, sel)).find(Boolean) ?? null;
  const find = (id) => deep(document, `svg[data-chart="${id}"]`);
  for (const id of ids) {
    const svg = find(id), row = svg.closest(".bv-chart-row");
    (row ? row.parentElement : svg.parentElement).style.width = "900px";
  }
  await new Promise((done) => setTimeout(done, 400));  // each box redraws from its own ResizeObserver
  return ids.map((id) => find(id).outerHTML);
}"""
EXERCISE_CHARTS = {
    "knee": ("knee-itl", "knee-throughput", "knee-latency"),
    "spread": ("spread-heavy", "spread-uniform", "spread-fixed", "spread-curve"),
    "temperature": ("temperature-row0", "temperature-row1", "temperature-row2"),
}


def _exercise_shown(page, tab: str) -> tuple[list[str], list[str]]:
    return _exercise_parts(page, tab), page.evaluate(SVG_AT_900, list(EXERCISE_CHARTS[tab]))


def test_served_and_exported_exercises_show_the_same(page, page_errors, exported, app_url):
    """The knee guessed at a preset, rate and target, the spread revealed at a sigma, a test run with the bug on.

    Both pages show the same texts, element for element, and their figures draw the same points: the exported page
    holds the served views' own texts and draws with the served chart modules.
    """
    from .helpers import open_app

    guess, test = 16, next(c for c in ASSERTIONS if not catches_bug(c))
    shown = {}
    for opened in ("served", "exported"):
        if opened == "served":
            open_app(page, app_url, "?tab=knee&rate=80&itl=30")
            page.get_by_label("Accelerator").select_option(label="A100 80GB SXM")
            page.locator(".bv-knee-guess button", has_text=re.compile(rf"^{guess}$")).first.click()
            expect(page.locator("[data-computing]")).to_have_count(0, timeout=30_000)
            from app.exercises.knee import cached_sweep

            swept = tuple(cached_sweep(80.0, cost_model("a100-80gb", "llama2-7b")))
            load = re.sub(r"<[^>]+>", "", load_html(80.0, cost_model("a100-80gb", "llama2-7b"), swept))
            expect(page.locator(".bv-load").first).to_have_text(load, timeout=30_000)  # the preset's sweep shown
            expect(page.locator(".bv-moves").first).to_be_visible(timeout=30_000)
        else:
            _open(page, exported + "?tab=knee")
            _knee_settings(page, {"knee-accelerator": "a100-80gb", "knee-rate": "80"}, 30, guess)
        knee = _exercise_shown(page, "knee")
        if opened == "served":
            open_app(page, app_url, "?tab=spread&sigma=0.5")
        else:
            page.get_by_role("tab", name="Exercise 2: length spread").click()
            page.locator("input[name=spread-sigma]").fill("0.5")
        page.get_by_label(GUESSES["narrow"][0], exact=True).check()
        page.get_by_role("button", name="Reveal the ratios").click()
        expect(page.locator("[data-spread=heavy-drain_ratio]").first).to_be_visible(timeout=15_000)
        spread = _exercise_shown(page, "spread")
        if opened == "served":
            open_app(page, app_url, "?tab=temperature", canvas=False)
        else:
            page.get_by_role("tab", name="Exercise 3: one temperature").click()
        page.get_by_label(test, exact=True).check()
        page.get_by_role("button", name="Run it on both samplers").click()
        page.get_by_label("Inject the bug", exact=False).check()
        expect(page.locator("[data-changed]").first).to_have_attribute("data-changed", "2", timeout=15_000)
        temperature = _exercise_shown(page, "temperature")
        shown[opened] = {"knee": knee, "spread": spread, "temperature": temperature}
    for tab in EXERCISE_PARTS:
        assert shown["served"][tab] == shown["exported"][tab], tab


@pytest.mark.parametrize(
    "query, message",
    [
        ("?lengths=fixed&arrival_window=junk", "arrival_window='junk' is not allowed (use a whole number)"),
        ("?lengths=fixed&arrival_window=1_0", "arrival_window='1_0' is not allowed"),
        ("?lengths=sideways", "lengths='sideways' is not allowed (use heavy, uniform, fixed)"),
        ("?slots=" + "9" * 30, "is not a whole number (allowed 1-16); kept 4."),
        ("?step=99999", "step='99999' is past the last step; using 63."),
        ("?mode=turbo", "mode='turbo' is not allowed (use continuous or static or sjf or priority)"),
        ("?theme=purple", "theme='purple' is not allowed (use light or dark); using light."),
    ],
)
def test_export_names_junk_in_its_address(page, page_errors, offline, exported, query, message):
    """Round 4, defect 13: the exported page says what it refused or clamped, as the served page does."""
    _open(page, exported + query)
    expect(page.locator(".bv-message")).to_contain_text(message)


def test_export_dark_theme_is_the_served_pages_and_stays_in_the_address(page, page_errors, offline, exported):
    """?theme=dark from file://: the dark page, kept in the address as the learner moves (the pixels: below)."""
    _open(page, exported + "?theme=dark&seed=7")
    assert page.evaluate("document.body.classList.contains('bv-dark')")
    assert page.evaluate("getComputedStyle(document.body).backgroundColor") == "rgb(18, 18, 18)"
    page.locator("button[data-mode=static]").click()
    expect(page).to_have_url(re.compile(r"\?theme=dark&seed=7&mode=static$"))
    _open(page, exported + "?theme=dark&tab=memory")  # its choice buttons read on the dark page (they were light)
    button = page.locator(".bv-choices button:not([aria-pressed=true])").first
    colours = button.evaluate("b => [getComputedStyle(b).color, getComputedStyle(b).backgroundColor]")
    assert contrast(*colours) >= 4.5, colours
    _open(page, exported + "?theme=light")
    assert not page.evaluate("document.body.classList.contains('bv-dark')")


def test_export_schedulers_tab_guesses_then_shows_the_cores_lineups(page, page_errors, offline, exported):
    """From file://: each carried lineup draws every scheduler, asks first, then its table and lesson are the core's."""
    from app.export.schedulers import lineup_keys
    from app.schedulers.data import shared_lineup
    from app.schedulers.words import ROWS, lessons_html, shown_best

    _open(page, exported + "?tab=schedulers")
    page.wait_for_function("window.__bvLineup && window.__bvLineup.timelines.length === 4", timeout=15_000)
    for name, (label, key) in lineup_keys().items():
        page.get_by_role("button", name=label, exact=True).click()
        lines = shared_lineup(key)
        assert page.evaluate("window.__bvLineup.view.order") == [line.entry.text() for line in lines]
        assert page.locator("#bv-lineup-table table").count() == 0
        expect(page.locator("#bv-lineup-ask [data-lineup-guess=ask]")).to_be_visible()
        page.locator("#bv-lineup-guesses button").nth(1).click()
        for field, _words, fmt in ROWS[:4]:
            marked = page.locator(f"#bv-lineup-table tr[data-row={field}] td[data-best='1']")
            cols = {int(marked.nth(i).get_attribute("data-col")) for i in range(marked.count())}
            assert cols == shown_best(lines, field, fmt)
        lessons = lessons_html(lines, cost_model(key.accelerator, key.model)).replace("</p>", "</p> ")
        expected = " ".join(re.sub(r"<[^>]+>", "", lessons).split())  # paragraphs apart, as the page shows them
        assert " ".join(page.locator("#bv-lineup-lessons").inner_text().split()) == expected
        assert (name == "default") == (expected == "")  # every lesson's sentence shows beside its pair


SAME_PIXELS = [  # (query, a story button to press after opening, or None)
    ("?seed=7&slots=5&mode=static", None),
    ("?preset=worked&step=9", None),
    ("?slots=3&step=40", None),
    ("?clock=ms&slots=5&step=30", None),  # on a clock: rectangles by time, the same axis on both pages
    ("?clock=ms&seed=7&slots=3", None),  # generated traffic on a clock
    ("?theme=dark&seed=7&slots=5", None),  # the dark theme's colours on both pages
    ("", "A pool of"),  # the memory lesson's paged pool: KV strips on the pool's scale
    ("", "blocks: preemption"),  # its tight pool: preempted requests recompute
]


@pytest.mark.parametrize("query, button", SAME_PIXELS, ids=[q or b for q, b in SAME_PIXELS])
def test_served_and_exported_pages_draw_the_same_pixels(page, page_errors, exported, app_url, query, button):
    """The same settings on both pages: both timelines and their KV strips are the same picture, pixel for pixel."""
    from .helpers import open_app

    pictures = []
    for opened in ("served", "exported"):
        if opened == "served":
            open_app(page, app_url, query)
        else:
            _open(page, exported + query)
        if button:
            page.locator("button.bv-story-button", has_text=button).click()
            page.wait_for_function(
                "document.body.dataset.bvPlace?.startsWith('memory') || "
                "(window.__bvWidget && window.__bvWidget.view.pool !== null)",
                timeout=15_000,
            )
        page.locator(".bv-widget-root").evaluate("e => { e.style.width = '900px'; }")  # one width on both pages
        page.wait_for_timeout(400)  # the renderer repaints on its ResizeObserver
        pictures.append(
            [
                page.locator(f"canvas[data-timeline={name}]").evaluate("c => [c.width, c.height, c.toDataURL()]")
                for name in ("timeline", "timeline-other")
            ]
        )
    served, exported_ = pictures
    assert [p[:2] for p in served] == [p[:2] for p in exported_]
    assert served == exported_


def test_export_address_follows_and_opens_what_it_says(page, page_errors, offline, exported):
    """As served, the address follows the place, mode, slots, seed, step and tab; loaded, it opens the same view.

    A lesson at a seed, a memory lesson's pool, the worked example; a pool the page does not carry is named.
    """
    _open(page, exported)
    expect(page).to_have_url(exported)  # the default view: no query
    page.get_by_role("button", name=story.LESSONS["heavy-queued"][0]).click()
    _press(page, "seed", "ArrowRight")
    page.locator("button[data-mode=static]").click()
    page.get_by_role("button", name="◂ Back (One step back)").click()
    want = "?lengths=heavy&arrival_window=1&seed=5&mode=static&step=62"
    expect(page).to_have_url(exported + want)
    drawn = _both(page, 4)
    _open(page, exported + want)
    assert page.evaluate("[document.body.dataset.bvPlace, window.__bvWidget.step]") == ["heavy-queued", 62]
    assert _both(page, 4) == drawn
    label, values = memory_lesson.lesson_buttons()["contiguous"]
    page.get_by_role("button", name=label).click()
    expect(page).to_have_url(exported + f"?kv_blocks={values['kv_blocks']}&allocation=contiguous&mode=static&step=62")
    _open(page, page.url)
    assert page.evaluate("document.body.dataset.bvPlace") == "memory-contiguous"
    page.get_by_role("button", name="The chapter's worked example (A-F)").click()
    expect(page).to_have_url(exported + "?preset=worked&mode=static")
    _open(page, exported + "?kv_blocks=5")
    expect(page.locator(".bv-message")).to_contain_text("this KV pool is set on the served app only")


def test_export_memory_tab_is_the_served_tabs(page, page_errors, offline, exported):
    """From file://: the pool and step from the address, the buttons and the budget draw what the oracle writes."""
    from app.memory.lesson import MIN_BLOCKS, MODES, lesson_html, runs_for
    from app.memory.view import chunked_html
    from tests.oracles.memory_view import mode_html

    _open(page, exported + "?tab=memory&blocks=7&budget=1024")
    tab = page.locator("#bv-memory-tab")
    expect(tab).to_have_attribute("data-blocks", "7")
    for _ in range(3):
        page.get_by_role("button", name="Step ▸").last.click()
    expect(tab).to_have_attribute("data-step", "3")
    runs, width = runs_for(7), page.evaluate("Number(document.querySelector('[name=memory-step]').max)") + 1
    want = "".join(mode_html(m, runs[m], 3, width, 7) for m in MODES)
    assert tab.locator(".bv-mem-modes").inner_html() == _normalised(page, want)
    assert tab.locator(".bv-mem-lesson").inner_html() == _normalised(page, lesson_html(7))
    assert tab.locator(".bv-mem-chunked").inner_html() == _normalised(page, chunked_html(1024))
    expect(page).to_have_url(exported + "?tab=memory&blocks=7&budget=1024")
    _press(page, "blocks", "Home")  # the smallest pool: memory decides, the log says why
    expect(tab).to_have_attribute("data-blocks", str(MIN_BLOCKS))
    expect(tab.locator("[data-mem-log=paged] li").first).not_to_have_text("no memory decision at this step")
    _open(page, exported + "?tab=memory&blocks=2_0&budget=7")
    expect(page.locator(".bv-message")).to_contain_text("blocks='2_0' is not a whole number")
    expect(page.locator(".bv-message")).to_contain_text("budget='7' is not allowed")


def test_export_clock_on_the_chapters_generated_and_worked_traffic(page, page_errors, offline, exported):
    """On a clock as served: its buttons, the worked example kept on the clock, the address, and what it lacks named."""
    from app.export.page import clock_buttons

    to_clock, to_steps = clock_buttons()
    _open(page, exported + "?clock=ms")  # a link on a clock opens there, with nothing to say about it
    expect(page.locator("body")).to_have_attribute("data-bv-place", "chapter@ms")
    expect(page.locator(".bv-message")).to_be_hidden()
    _open(page, exported)
    page.get_by_role("button", name=to_clock).click()
    expect(page.locator("body")).to_have_attribute("data-bv-place", "chapter@ms")
    assert page.evaluate("window.__bvWidget.view.clock") == "ms"
    expect(page).to_have_url(exported + "?clock=ms")
    expect(page.locator(".bv-step")).to_contain_text("ms")  # the cursor is a time
    expect(page.get_by_role("button", name=to_clock)).to_be_hidden()
    page.get_by_role("button", name="The chapter's worked example (A-F)").click()
    expect(page.locator("body")).to_have_attribute("data-bv-place", "worked@ms")
    expect(page).to_have_url(exported + "?preset=worked&clock=ms")
    page.get_by_role("button", name=story.LESSONS["fixed-queued"][0]).click()  # a lesson is on the step axis, as served
    expect(page.locator("body")).to_have_attribute("data-bv-place", "fixed-queued")
    expect(page.get_by_role("button", name=to_clock)).to_be_hidden()  # not carried there
    _open(page, exported + "?clock=ms")
    _press(page, "seed", "ArrowRight")  # generated traffic on the clock, as served, at the seeds it carries
    expect(page.locator("body")).to_have_attribute("data-bv-place", "generated@ms")
    expect(page).to_have_url(exported + "?seed=5&clock=ms")
    assert page.evaluate("window.__bvWidget.view.clock") == "ms"
    _open(page, exported + "?clock=ms&seed=30")
    _press(page, "seed", "ArrowRight")  # past the clock's seeds: said, and the seed kept
    expect(page.locator(".bv-message")).to_contain_text("generated traffic at seeds 0-30")
    expect(page.locator("output[data-value=seed]")).to_have_text("30")
    page.get_by_role("button", name=to_steps).click()
    expect(page.locator("body")).to_have_attribute("data-bv-place", "generated")
    page.get_by_role("button", name=to_clock).click()
    expect(page.locator("body")).to_have_attribute("data-bv-place", "generated@ms")
    _open(page, exported + "?clock=ms&seed=40")  # a seed the step axis carries but the clock does not
    expect(page.locator(".bv-message")).to_contain_text("generated traffic at seeds 0-30")
    expect(page.locator("body")).to_have_attribute("data-bv-place", "generated")
    page.get_by_role("button", name=to_clock).click()  # offered, and pressed it says why it stays
    expect(page.locator(".bv-message")).to_contain_text("; kept the step axis.")
    expect(page.locator("body")).to_have_attribute("data-bv-place", "generated")
    _open(page, exported + "?clock=ms&lengths=fixed&arrival_window=1")
    expect(page.locator(".bv-message")).to_contain_text("This page carries the clock on the chapter's traffic")
