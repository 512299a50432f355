"""The chapter around the widget: the batch at the cursor, the scheduling loop, one-click lessons, and the quiz."""

import re
from urllib.parse import parse_qs

import numpy as np
from playwright.sync_api import expect

from app.quiz.view import QUESTIONS
from core import TrafficConfig, generate, simulate
from core.batch.step_batch import ContinuousBatches
from core.chapter.worked_example import BATCH_TIMEOUT, SLOTS, worked_example

from .helpers import core_run, open_app, wait_for_timeline
from .pixels import read_timeline, timeline_point

CONTINUOUS = "[data-policy=continuous]"


def _ints(text: str | None) -> list[int]:
    return [int(v) for v in text.split(",")] if text else []


def _expected_positions(run, t: int) -> tuple[list[str], list[int], list[int]]:
    """Return (ids, cu_seqlens, positions) at step t from the schedule alone: start, finish, slot and prompt."""
    ids, cu, positions = [], [0], []
    for i in np.argsort(run.slot, kind="stable"):
        if run.start[i] <= t < run.finish[i]:
            prompt, age = max(1, run.requests[i].prompt_tokens), t - int(run.start[i])
            new = list(range(prompt)) if age == 0 else [prompt + age - 1]
            ids.append(run.requests[i].id)
            positions += new
            cu.append(cu[-1] + len(new))
    return ids, cu, positions


def _read_continuous(page) -> tuple[list[str], list[int], list[int], dict[str, list[int]]]:
    section = page.locator(CONTINUOUS).first
    segments = section.locator(".bv-seg")
    ids = [segments.nth(k).get_attribute("data-req") for k in range(segments.count())]
    positions = [p for k in range(segments.count()) for p in _ints(segments.nth(k).get_attribute("data-positions"))]
    rows = section.locator(".bv-table-row")
    tables = {
        rows.nth(k).get_attribute("data-req"): _ints(rows.nth(k).get_attribute("data-blocks"))
        for k in range(rows.count())
    }
    return ids, _ints(section.get_attribute("data-cu-seqlens")), positions, tables


def _check_batch_at(page, run, t: int) -> None:
    expect(page.locator(f"[data-batch-step='{t}']")).to_have_count(1, timeout=15_000)
    ids, cu, positions, tables = _read_continuous(page)
    assert (ids, cu, positions) == _expected_positions(run, t)
    core = ContinuousBatches(run).at(t)
    for row, i in enumerate(core.requests):
        assert tables[run.requests[i].id] == [int(b) for b in core.batch.block_tables[row] if b >= 0]
    assert page.locator(f"{CONTINUOUS} [data-array=cu_seqlens]").first.inner_text().split() == [str(c) for c in cu]


def test_the_ragged_batch_at_the_cursor_equals_the_cores(page, page_errors, app_url):
    """Worked example at steps 4 and 5 (one playback step) and default traffic at 20, as the page shows them.

    Rows, cu_seqlens and positions are checked against the schedule alone, block tables against build_batch.
    """
    worked = simulate(worked_example(), SLOTS, "continuous")
    open_app(page, app_url, "?preset=worked&step=4")
    _check_batch_at(page, worked, 4)
    assert _read_continuous(page)[1] == [0, 1, 6, 7, 8]  # E's 5-token prompt between three decodes
    page.get_by_role("button", name="Step ▸").first.click()
    _check_batch_at(page, worked, 5)
    default = core_run("continuous", 4, 4)
    open_app(page, app_url, "?seed=4&slots=4&step=20")
    _check_batch_at(page, default, 20)


def test_the_static_rectangle_marks_its_padding_rows(page, page_errors, app_url):
    """Worked example, static, step 5: A-D are the rows, B has finished and is a padding row; 3 of 4 did work."""
    run = simulate(worked_example(), SLOTS, "static", BATCH_TIMEOUT)
    open_app(page, app_url, "?preset=worked&mode=static&step=5")
    section = page.locator("[data-policy=static]").first
    expect(section).to_have_attribute("data-step", "5", timeout=15_000)
    members = [i for i in np.argsort(run.slot, kind="stable") if run.start[i] <= 5 < run.release[i]]
    live = [5 < run.finish[i] for i in members]
    rows = section.locator(".bv-rect-row")
    assert [rows.nth(k).get_attribute("data-req") for k in range(rows.count())] == [run.requests[i].id for i in members]
    assert [rows.nth(k).get_attribute("data-live") == "1" for k in range(rows.count())] == live
    assert section.get_attribute("data-rows") == str(len(members))
    assert section.get_attribute("data-useful-rows") == str(sum(live)) == "3"
    expect(section.locator(".bv-rect-row[data-req=B] .bv-padrow")).to_have_text("padding")


def test_hovering_a_request_outlines_its_tokens_and_blocks(page, page_errors, app_url):
    """Hover a running request in the timeline: its segment, block-table row and blocks are outlined; then cleared."""
    run = core_run("continuous", 4, 4)
    open_app(page, app_url, "?seed=4&slots=4&step=20")
    expect(page.locator("[data-batch-step='20']")).to_have_count(1)
    i = next(i for i in range(len(run.requests)) if run.start[i] <= 20 < run.finish[i])
    name = run.requests[i].id
    outline = f"{CONTINUOUS} .bv-table-row[data-req='{name}']"
    style = "e => getComputedStyle(e).outlineStyle"
    assert page.locator(outline).first.evaluate(style) == "none"
    x, y = timeline_point(page, "timeline", float(run.start[i]) + 0.5, float(run.slot[i]) + 0.5)
    page.mouse.move(x, y)
    page.wait_for_function(
        f"""() => {{
          const find = (root) => {{
            const e = root.querySelector(".bv-table-row[data-req='{name}']");
            if (e) return e;
            for (const host of root.querySelectorAll("*")) if (host.shadowRoot) {{
              const f = find(host.shadowRoot); if (f) return f; }}
            return null;
          }};
          const e = find(document);
          return getComputedStyle(e).outlineStyle === "solid";
        }}""",
        timeout=5_000,
    )
    others = page.locator(f"{CONTINUOUS} .bv-table-row:not([data-req='{name}'])")
    assert all(others.nth(k).evaluate(style) == "none" for k in range(others.count()))
    assert page.locator(f"{CONTINUOUS} .bv-seg[data-req='{name}']").first.evaluate(style) == "solid"
    page.mouse.move(5, 5)
    x, y = timeline_point(page, "timeline", 0.5, 3.5)  # an idle cell
    page.mouse.move(x, y)
    expect(page.locator(outline).first).to_have_css("outline-style", "none")


def _lit(page) -> list[str]:
    lines = page.locator(".bv-loop .bv-code-line.bv-lit")
    return [lines.nth(k).get_attribute("data-line") for k in range(lines.count())]


def test_the_scheduling_loop_lights_what_the_step_did(page, page_errors, app_url):
    """Worked example, continuous: step 3 only runs the batch; step 4 retires B and admits E (played in the browser)."""
    open_app(page, app_url, "?preset=worked&step=3")
    expect(page.locator("[data-loop-step='3']")).to_have_count(1)
    assert _lit(page) == ["head", "build", "forward"]
    page.get_by_role("button", name="Step ▸").first.click()
    expect(page.locator("[data-loop-step='4']")).to_have_count(1)
    assert _lit(page) == ["head", "retire", "admit", "build", "forward"]
    assert "B leaves" in page.locator(".bv-loop [data-line=retire]").first.inner_text()
    assert "E joins" in page.locator(".bv-loop [data-line=admit]").first.inner_text()


def test_one_click_lessons(page, page_errors, app_url):
    """The queued fixed-lengths lesson draws the core's traffic; 'Try slots = 1' makes both timelines one schedule."""
    open_app(page, app_url, "?seed=4")
    page.get_by_role("button", name="Fixed lengths, all queued at step 0").click()
    expect(page).to_have_url(
        re.compile(r"lengths=fixed.*arrival_window=1|arrival_window=1.*lengths=fixed"), timeout=15_000
    )
    fixed = generate(TrafficConfig(seed=4, lengths="fixed", arrival_window=1))
    wait_for_timeline(page, simulate(fixed, 4, "continuous").timeline_strings(64), 4)
    page.get_by_role("button", name="Try slots = 1").click()
    expected = simulate(fixed, 1, "continuous").timeline_strings(64)
    assert expected == simulate(fixed, 1, "static").timeline_strings(64)
    wait_for_timeline(page, expected, 1)
    assert read_timeline(page, 1, 64, name="timeline-other") == expected


def _quiz_answer(page, n: int, option: int) -> None:
    q = QUESTIONS[n]
    expect(page.locator(".bv-quiz-progress").first).to_contain_text(f"Question {n + 1} of {len(QUESTIONS)}")
    page.get_by_label(q.options[option], exact=True).check()
    page.get_by_role("button", name="Check my answer").click()
    expect(page.locator(f".bv-verdict[data-question={q.key}]").first).to_be_visible(timeout=15_000)


OPTION_FITS_JS = """(el) => { const box = el.getBoundingClientRect();
  return el.scrollWidth <= el.clientWidth + 1 && box.right <= window.innerWidth; }"""


def test_the_quiz_scores_and_explains(page, page_errors, app_url):
    """?tab=quiz: one question at a time, each answer explained and scored; a link opens its view in place."""
    open_app(page, app_url, "?tab=quiz", canvas=False)
    expect(page.locator(".bv-tab.bv-active").first).to_have_text("Check yourself")
    expect(page.locator(".bv-question")).to_have_count(1)  # one question at a time
    labels = page.locator(".bv-quiz label")
    assert labels.count() == len(QUESTIONS[0].options)
    for k in range(labels.count()):  # long options wrap inside the 1280 px column
        assert labels.nth(k).evaluate(OPTION_FITS_JS), QUESTIONS[0].options[k]
    first, second = QUESTIONS[0], QUESTIONS[1]
    _quiz_answer(page, 0, (first.answer + 1) % len(first.options))
    item = page.locator(f".bv-verdict[data-question={first.key}]").first
    expect(item).to_have_attribute("data-verdict", "wrong")
    assert first.why in item.inner_text() and first.options[first.answer] in item.inner_text()
    expect(page.locator("[data-score]").first).to_have_text("Score: 0 / 1")
    assert not re.search(r"\d\.\s*\d\.", page.locator(".bv-quiz").first.inner_text())  # no "1. 1. Right."
    page.get_by_role("button", name="Next question").click()
    _quiz_answer(page, 1, second.answer)
    expect(page.locator(f".bv-verdict[data-question={second.key}]").first).to_have_attribute("data-verdict", "right")
    expect(page.locator("[data-score]").first).to_have_text("Score: 1 / 2")
    # The link opens the worked example under static batching in this page: no reload, the answers stay.
    page.evaluate("window.__marker = 1")
    page.get_by_role("button", name=f"Show me: {second.link_text}").click()
    expect(page.locator(".bv-tab.bv-active").first).to_have_text("Simulator", timeout=15_000)
    expect(page).to_have_url(re.compile(r"preset=worked.*mode=static|mode=static.*preset=worked"), timeout=15_000)
    expect(page.locator("[data-policy=static][data-step='15']")).to_have_count(1, timeout=15_000)
    assert page.evaluate("window.__marker") == 1
    page.locator(".bv-tab", has_text="Check yourself").first.click()
    expect(page.locator("[data-score]").first).to_have_text("Score: 1 / 2", timeout=15_000)
    expect(page.locator(f".bv-verdict[data-question={second.key}]").first).to_have_attribute("data-verdict", "right")
    assert page.get_by_label(second.options[second.answer], exact=True).is_checked()
    page.get_by_role("button", name="Previous question").click()
    expect(page.locator(f".bv-verdict[data-question={first.key}]").first).to_have_attribute("data-verdict", "wrong")
    page.get_by_role("button", name=f"Show me: {first.link_text}").click()
    expect(page).to_have_url(re.compile(r"arrival_window=1"), timeout=15_000)
    expect(page).not_to_have_url(re.compile(r"preset=worked"))
    assert page.evaluate("window.__marker") == 1
    page.locator(".bv-tab", has_text="Check yourself").first.click()
    for n in range(1, len(QUESTIONS)):
        page.get_by_role("button", name="Next question").click()
        expect(page.locator(".bv-quiz-progress").first).to_contain_text(f"Question {n + 1} of", timeout=15_000)
        if n >= 2:
            _quiz_answer(page, n, QUESTIONS[n].answer)
    page.get_by_role("button", name="See your result").click()
    expect(page.locator("[data-final-score]").first).to_have_attribute("data-final-score", str(len(QUESTIONS) - 1))
    assert page.evaluate("window.__marker") == 1


def test_a_bad_tab_is_named_and_the_simulator_shown(page, page_errors, app_url):
    """?tab=nonsense says what is allowed and shows the simulator."""
    open_app(page, app_url, "?tab=nonsense")
    allowed = "(use simulator, knee, spread, temperature, memory, schedulers, quiz)"
    expect(page.locator(".bv-message").first).to_contain_text(f"tab='nonsense' is not allowed {allowed}")
    expect(page.locator(".bv-tab.bv-active").first).to_have_text("Simulator")


def test_every_show_me_link_opens_the_step_it_names(page, page_errors, app_url):
    """Each question's "Show me", from a fresh page, opens its view at the step its link names, as the link itself does.

    Questions 3 and 4 named step 5 and step 4 of the worked example and opened it at step 23 (the sentences-true
    issue, item 2): the payload made when the window clamped the step could arrive after the step itself.
    """
    for n, q in enumerate(QUESTIONS):
        step = parse_qs(q.link.lstrip("?")).get("step")
        if not step:
            continue
        open_app(page, app_url, "?tab=quiz", canvas=False)
        expect(page.locator(".bv-quiz-progress").first).to_contain_text("Question 1 of", timeout=15_000)
        for k in range(n):
            page.get_by_role("button", name="Next question").click()
            expect(page.locator(".bv-quiz-progress").first).to_contain_text(f"Question {k + 2} of", timeout=15_000)
        _quiz_answer(page, n, q.answer)
        page.get_by_role("button", name=f"Show me: {q.link_text}").click()
        expect(page.locator(".bv-tab.bv-active").first).to_have_text("Simulator", timeout=15_000)
        expect(page).to_have_url(re.compile(rf"step={step[0]}(&|$)"), timeout=15_000)
        page.wait_for_timeout(1000)  # the payloads of the link's settings have all arrived
        assert page.locator(".bv-step").first.get_attribute("data-step") == step[0], q.key
