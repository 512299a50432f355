"""The page's lessons read back from the served page: one-click lessons, the worked example, the chapter's parts."""

from dataclasses import replace

from playwright.sync_api import expect

from app.simulator import chapter, memory_lesson, story
from core import TrafficConfig, compute_metrics, generate, simulate
from core.chapter.chapter_traffic import CHAPTER_FIGURES, chapter_traffic
from core.chapter.worked_example import BATCH_TIMEOUT, SLOTS, WINDOW, worked_example, worked_figures
from core.measure.losses import losses
from core.measure.metrics import latency_so_far

from .helpers import open_app, open_full_head_to_head, text_of, wait_for_timeline
from .pixels import read_timeline


def _lesson_runs(key: str, seed: int = 4):
    requests = generate(replace(TrafficConfig(seed=seed), **story.LESSONS[key][1]))
    return simulate(requests, story.LESSON_SLOTS, "static"), simulate(requests, story.LESSON_SLOTS, "continuous")


def _click_lesson(page, key: str) -> None:
    page.get_by_role("button", name=story.LESSONS[key][0]).click()


def test_a_lesson_opens_on_the_slots_its_sentence_holds_on(page, page_errors, app_url):
    """From 16 slots, where every batch holds the whole queue, the heavy-tailed lesson opens on its own 4 slots."""
    open_app(page, app_url, "?mode=continuous&slots=16&seed=4")
    _click_lesson(page, "heavy-queued")
    static, continuous = _lesson_runs("heavy-queued")
    wait_for_timeline(page, continuous.timeline_strings(64), story.LESSON_SLOTS)
    assert read_timeline(page, 4, 64, name="timeline-other") == static.timeline_strings(64)
    assert static.timeline_strings(64) != continuous.timeline_strings(64)  # the gap the sentence promises


def test_fixed_lengths_queued_give_identical_timelines(page, page_errors, app_url):
    """The queued fixed-lengths lesson: both timelines read back identical, and the head-to-head agrees."""
    open_app(page, app_url, "?mode=continuous&slots=4&seed=4")
    _click_lesson(page, "fixed-queued")
    open_full_head_to_head(page)
    static, continuous = _lesson_runs("fixed-queued")
    assert static.timeline_strings(64) == continuous.timeline_strings(64)
    wait_for_timeline(page, continuous.timeline_strings(64), 4)
    assert read_timeline(page, 4, 64, name="timeline-other") == static.timeline_strings(64)
    for key in ("completed", "utilisation", "avg_latency_all", "padding", "idle_while_waiting", "boundary_wait"):
        assert text_of(page, f"[data-h2h=static-{key}]") == text_of(page, f"[data-h2h=continuous-{key}]"), key
    assert text_of(page, "[data-h2h=static-padding]") == "0"


def test_fixed_lengths_spread_out_still_wait_for_the_boundary(page, page_errors, app_url):
    """Fixed lengths over 18 steps: static pads nothing on the page, yet requests wait and slots sit empty."""
    open_app(page, app_url, "?mode=static&slots=4&seed=4")
    _click_lesson(page, "fixed-spread")
    open_full_head_to_head(page)
    static, continuous = _lesson_runs("fixed-spread")
    wait_for_timeline(page, static.timeline_strings(64), 4)
    loss = losses(static, 64)
    expect(page.locator("[data-h2h=static-padding]").first).to_have_text("0")
    assert text_of(page, "[data-h2h=static-boundary_wait]") == str(loss.boundary_wait) != "0"
    assert text_of(page, "[data-h2h=static-idle_while_waiting]") == str(loss.idle_while_waiting) != "0"
    s, c = compute_metrics(static, 64), compute_metrics(continuous, 64)
    assert float(text_of(page, "[data-h2h=static-avg_latency_all]")) == round(s.avg_latency_all, 1)
    assert float(text_of(page, "[data-h2h=continuous-avg_latency_all]")) < round(s.avg_latency_all, 1)
    assert text_of(page, "[data-h2h=continuous-avg_latency_all]") == f"{c.avg_latency_all:.1f}"


def test_latency_never_favours_the_mode_that_completes_fewer(page, page_errors, app_url):
    """Seed 37: static completes fewer; the latency over every request shows it slower, the completed-only labelled."""
    open_app(page, app_url, "?mode=continuous&slots=4&seed=37")
    requests = generate(TrafficConfig(seed=37))
    s, c = (compute_metrics(simulate(requests, 4, mode), 64) for mode in ("static", "continuous"))
    assert s.completed < c.completed and s.avg_latency < c.avg_latency  # the trap the old page fell into
    expect(page.locator("[data-h2h=static-avg_latency_all]").first).to_have_text(f"{s.avg_latency_all:.1f}")
    expect(page.locator("[data-h2h=continuous-avg_latency_all]").first).to_have_text(f"{c.avg_latency_all:.1f}")
    assert c.avg_latency_all < s.avg_latency_all
    cell = page.locator("td", has=page.locator("[data-h2h=static-avg_latency]")).first
    expect(cell).to_have_text(f"{s.avg_latency:.1f} of {s.completed}")


def test_the_worked_example_states_its_figures_on_a_window_that_fits(page, page_errors, app_url):
    """?preset=worked: a 24-step window, the eight caption figures from the core, generator controls hidden."""
    open_app(page, app_url, "?preset=worked&mode=static")
    requests = worked_example()
    static = simulate(requests, SLOTS, "static", BATCH_TIMEOUT)
    continuous = simulate(requests, SLOTS, "continuous")
    wait_for_timeline(page, static.timeline_strings(WINDOW), SLOTS, WINDOW)
    for key, value in worked_figures(static, continuous).items():
        expect(page.locator(f"[data-worked={key}]").first).to_have_text(str(value))
    expect(page.locator("[data-h2h=static-drain]").first).to_have_text("22")
    expect(page.locator("[data-h2h=continuous-drain]").first).to_have_text("14")
    expect(page.get_by_text("Traffic seed").first).to_be_hidden()
    expect(page.get_by_text("Batch slots").first).to_be_visible()
    assert "0 rows" not in page.locator("[data-batch-step]").first.inner_text()


def test_the_chapters_parts_are_on_the_page(page, page_errors, app_url):
    """The restructured loop and build_batch are the core's code with their lines marked; the figures are the core's."""
    open_app(page, app_url, "?mode=continuous&slots=4&seed=4")
    loop = page.locator("[data-code=loop]")
    expect(loop).to_contain_text("while done < n:")
    assert loop.locator("[data-mark=retire]").count() >= 2 and loop.locator("[data-mark=admit]").count() >= 2
    batch = page.locator("[data-code=build_batch]")
    for mark in ("token_ids", "positions", "cu_seqlens"):
        expect(batch.locator(f"[data-mark={mark}]")).to_have_count(1)
    figures = chapter.compare_figures()
    expect(page.locator("[data-figure=drain-ratio]")).to_have_text(f"{figures['drain_ratio']:.2f}×")
    expect(page.locator("[data-figure=static-padding]")).to_have_text(f"{figures['static_padding']:.0%}")
    page.get_by_text("What it prints").click()  # shut at first, a click away
    assert chapter.compare_output().splitlines()[-1] in page.locator("[data-figure=compare-output]").inner_text()
    for card in ("gain", "latency", "memory"):
        expect(page.locator(f"[data-card={card}]")).to_have_count(1)
    for engine in ("Orca", "vLLM", "TensorRT-LLM", "SGLang", "LMDeploy", "llama.cpp", "TGI"):
        expect(page.get_by_text(engine, exact=False).first).to_be_attached()
    expect(page.get_by_text("What's next")).to_have_count(1)


def test_the_page_opens_on_the_chapters_traffic_with_its_eight_figures(page, page_errors, app_url):
    """No query: the chapter's twelve requests, and the widget's figures read from the page; a seed move says so."""
    open_app(page, app_url)
    f = CHAPTER_FIGURES
    requests = chapter_traffic()
    continuous = simulate(requests, 4, "continuous")
    wait_for_timeline(page, continuous.timeline_strings(64), 4)
    expect(page.locator("[data-stat=completed]").first).to_have_text(f"{f.continuous_completed}/{f.requests}")
    expect(page.locator("[data-stat=useful_tokens]").first).to_have_text(str(f.continuous_useful_tokens))
    expect(page.locator("[data-stat=utilisation]").first).to_have_text(f"{f.continuous_utilisation}%")
    # The card counts every request arrived (the sentences-true issue, item 1); the chapter's completed-only
    # figures are the full head-to-head's, labelled there.
    card = latency_so_far(continuous.arrival, continuous.finish, 64)
    expect(page.locator("[data-stat=avg_latency]").first).to_have_text(f"{card:.1f}")
    expect(page.locator("[data-h2h=continuous-avg_latency]").first).to_have_text(f"{f.continuous_avg_latency:.1f}")
    expect(page.locator("[data-h2h=static-completed]").first).to_have_text(f"{f.static_completed}/{f.requests}")
    expect(page.locator("[data-h2h=static-utilisation]").first).to_have_text(f"{f.static_utilisation}%")
    expect(page.locator("[data-h2h=static-avg_latency]").first).to_have_text(f"{f.static_avg_latency:.1f}")
    seed = page.locator("input[name=seed]")
    seed.focus()
    seed.press("ArrowRight")
    expect(page.locator(".bv-message").first).to_contain_text("generated traffic (seed 5)", timeout=15_000)
    wait_for_timeline(page, simulate(generate(TrafficConfig(seed=5)), 4, "continuous").timeline_strings(64), 4)


def test_the_here_line_reads_the_view_on_screen(page, page_errors, app_url):
    """The line under the lessons says what holds on the view the learner set, on steps and on a clock.

    The sentences-true issue, items 4 and 5: at two slots the lesson's "static still falls behind" stood beside
    identical timelines, and on a clock "identical" beside static finishing later.
    """
    open_app(page, app_url, "?lengths=fixed&arrival_window=18&slots=2&seed=0")
    here = page.locator("[data-here]").first
    expect(here).to_contain_text("the two timelines are identical and both finish at step 168", timeout=15_000)
    expect(here).to_have_attribute("data-here", "identical")
    page.get_by_role("button", name="Fixed lengths, arriving over 18 steps").click()  # the lesson's own 4 slots
    expect(here).to_have_attribute("data-here", "steps", timeout=15_000)
    expect(here).to_contain_text("static pads nothing")
    open_app(page, app_url, "?lengths=fixed&arrival_window=1&clock=ms&seed=4")
    expect(page.locator("[data-here]").first).to_contain_text(
        "the two schedules are the same pass for pass, yet static finishes at 430.6 ms", timeout=15_000
    )


def test_a_story_button_far_below_brings_the_timelines_it_changes_into_view(page, page_errors, app_url):
    """A lesson button and a memory button, thousands of pixels below the timelines: a press shows the widget."""
    open_app(page, app_url, "?mode=continuous&slots=4&seed=4")
    widget = page.locator(".bv-widget-host").first
    for name in (story.LESSONS["fixed-queued"][0], next(iter(memory_lesson.lesson_buttons().values()))[0]):
        button = page.get_by_role("button", name=name).first
        button.scroll_into_view_if_needed()
        assert widget.bounding_box()["y"] < -1000, name  # the widget is far above, out of view
        button.click()
        expect(widget).to_be_in_viewport()
        top = widget.bounding_box()["y"]
        assert -1 <= top < page.viewport_size["height"] / 3, (name, top)


def test_the_here_line_and_one_slot_follow_the_pair_on_screen(page, page_errors, app_url):
    """With shortest first on screen the Here line names that pair, not static's figures; one slot shows the lessons'.

    A learner's read (issue 47): the Here line and "Try slots = 1" spoke of static and continuous beside shortest
    first against continuous, whose one-slot timelines differ (shortest first is not arrival order).
    """
    open_app(page, app_url, "?mode=sjf&slots=4&seed=4")
    here = page.locator(".bv-here").first
    expect(here).to_have_attribute("data-here", "other")
    expect(here).to_contain_text("the timelines show shortest first against continuous")
    page.get_by_role("radio", name="continuous").first.click()
    expect(here).to_have_attribute("data-here", "steps")
    expect(here).to_contain_text("static pads")
    page.get_by_role("radio", name="shortest first").first.click()
    expect(here).to_have_attribute("data-here", "other")
    page.get_by_role("button", name="Try slots = 1").click()
    expect(page.locator("[role=radio][aria-checked=true]").first).to_have_text("continuous")
    static, continuous = (simulate(chapter_traffic(), 1, p) for p in ("static", "continuous"))
    assert static.start.tolist() == continuous.start.tolist()  # what the line below says, from the core
    expect(here).to_contain_text("(1 slot, steps 0–63): the two timelines are identical")


def test_static_timeline_states_its_batch_timeout(page, page_errors, app_url):
    """Static's timeline says its batch timeout beside it (issue 47: it hid under "Memory and timeout")."""
    open_app(page, app_url, "?mode=static&slots=4&seed=4")
    labels = page.eval_on_selector_all("canvas[aria-label]", "els => els.map(e => e.getAttribute('aria-label'))")
    assert any(label.startswith("static batching · batch timeout 0 steps:") for label in labels), labels
    assert any(label.startswith("continuous batching:") for label in labels), labels  # no timeout of its own
    open_app(page, app_url, "?preset=worked&mode=static")  # the worked example's static waits a step to fill
    labels = page.eval_on_selector_all("canvas[aria-label]", "els => els.map(e => e.getAttribute('aria-label'))")
    assert any(f"batch timeout {BATCH_TIMEOUT} step" in label for label in labels), labels


def test_the_memory_caption_on_a_contiguous_pool_says_nobody_is_preempted(page, page_errors, app_url):
    """On a contiguous pool the caption adds that reservations never grow (its paged clause on preemption aside).

    A learner's read (issue 47): the caption spoke of preempting the one admitted last beside "0 preemptions" on a
    contiguous cache, where every request reserves its prompt plus its answer cap when admitted.
    """
    open_app(page, app_url, "?kv_blocks=22&allocation=contiguous&seed=2")
    caption = page.locator(".bv-caption").first
    expect(caption).to_contain_text("none ever needs another block and nobody is preempted")
    from app.simulator.state import SimState

    state = SimState(seed=2, kv_blocks=22, allocation="contiguous")
    assert state.runs["continuous"].schedule.memory_metrics()["preemptions"] == 0
    open_app(page, app_url, "?kv_blocks=22&seed=2")  # paged: the clause stands, the note does not
    expect(caption).not_to_contain_text("nobody is preempted")
