"""The real replay in the browser: run it, see measured beside simulated; the page keeps working while it runs."""

import numpy as np
from playwright.sync_api import expect

from core import TrafficConfig, compare, generate, simulate

from .helpers import CHART_JS, core_run, open_app
from .pixels import read_timeline

REPLAY_TITLE = "Real replay: the same schedules through a real model"


def open_replay(page) -> None:
    """Open the replay's disclosure (shut until asked for: a new session does not build its controls)."""
    page.get_by_text(REPLAY_TITLE).first.click()
    page.get_by_role("button", name="Run replay").wait_for(timeout=30_000)


def run_replay(page) -> None:
    """Open the replay's disclosure and press Run replay."""
    if not page.get_by_role("button", name="Run replay").is_visible():
        open_replay(page)
    page.get_by_role("button", name="Run replay").click()


def test_replay_shows_measured_beside_simulated(page, page_errors, app_url):
    """Run replay on the default traffic: predicted speedup and rows computed equal the core's; timelines drawn."""
    open_app(page, app_url, "?mode=continuous&slots=4&seed=4")
    run_replay(page)
    predicted = page.locator("[data-replay=predicted]").first
    expect(predicted).to_be_visible(timeout=60_000)
    requests = generate(TrafficConfig(seed=4))
    static, continuous = simulate(requests, 4, "static"), simulate(requests, 4, "continuous")
    assert predicted.inner_text() == f"{compare(static, continuous).throughput_ratio:.2f}×"
    rows = page.locator("[data-replay=static-rows]").first.inner_text()
    assert int(rows) == int(np.sum(static.release - static.start))
    assert int(page.locator("[data-replay=continuous-rows]").first.inner_text()) == int(
        np.sum(continuous.finish - continuous.start)
    )
    assert page.locator("[data-replay=device]").first.inner_text() == "cpu"
    drawn = page.evaluate(
        "['replay-static', 'replay-continuous', 'replay-step-time']"
        ".map(n => Bokeh.index.query_one(v => v.model.name === n) !== null)"
    )
    assert drawn == [True, True, True]  # both wall-clock timelines and the step-time plot


def test_page_answers_while_a_replay_runs_and_cancel_stops_it(page, page_errors, app_url):
    """During a long replay the seed slider still repaints the timeline; Cancel ends the replay with a message."""
    open_app(page, app_url, "?mode=continuous&slots=1&seed=4&requests=400")
    run_replay(page)
    expect(page.locator(".bk-Div >> text=/^Replaying/").first).to_be_visible(timeout=10_000)
    handle = page.locator("input[name=seed]")
    handle.focus()
    handle.press("ArrowRight")
    expected = simulate(generate(TrafficConfig(seed=5, requests=400)), 1, "continuous").timeline_strings(64)
    for _ in range(50):
        if read_timeline(page, 1, 64) == expected:
            break
        page.wait_for_timeout(100)
    assert read_timeline(page, 1, 64) == expected
    assert read_timeline(page, 1, 64) != core_run("continuous", 1, 4).timeline_strings(64)
    expect(page.locator(".bk-Div >> text=/^Replaying/").first).to_be_visible()  # still running
    page.get_by_role("button", name="Cancel").click()
    expect(page.locator(".bv-message >> text=Replay cancelled.").first).to_be_visible(timeout=30_000)


def test_closing_the_page_frees_the_replay_at_once(browser, app_url):
    """Close the tab during a long replay: the server's one replay slot is free again within seconds, not at expiry."""
    import time

    from app.real_replay.view import _SERVER_LOCK

    page = browser.new_page()
    open_app(page, app_url, "?mode=continuous&slots=1&seed=4&requests=1000")
    run_replay(page)
    expect(page.locator(".bk-Div >> text=/^Replaying/").first).to_be_visible(timeout=10_000)
    time.sleep(1.0)
    assert _SERVER_LOCK.locked()  # still replaying
    page.close()
    deadline = time.time() + 4  # the session itself lives on until its expiry (15 s); the replay would run ~20 s
    while _SERVER_LOCK.locked() and time.time() < deadline:
        time.sleep(0.05)
    assert not _SERVER_LOCK.locked()


def test_the_knee_view_overlays_the_replays_step_times(page, page_errors, app_url):
    """After a replay in this session, exercise 1 draws its measured step time at each batch size the replay ran."""
    open_app(page, app_url, "?mode=continuous&slots=4&seed=4")
    run_replay(page)
    expect(page.locator("[data-replay=predicted]").first).to_be_visible(timeout=60_000)
    page.locator(".bv-tab", has_text="Exercise 1").first.click()
    page.locator("svg[data-chart=knee-itl] g[data-dots=measured]").first.wait_for(state="attached", timeout=15_000)
    run = simulate(generate(TrafficConfig(seed=4)), 4, "continuous")
    active = {int((run.start <= t).sum() - (run.finish <= t).sum()) for t in range(run.drain)} - {0}
    drawn = page.evaluate(CHART_JS, "knee-itl")["dots"]["measured"]  # the diamonds, read back through the axes
    assert sorted(round(batch) for batch, _ in drawn) == sorted(active)


def test_online_replay_shows_predicted_beside_measured(page, page_errors, app_url, monkeypatch):
    """The real-time option: a predicted / measured / error row per figure, both wall-clock timelines drawn."""
    from app.real_replay import view as replay_view
    from core.clock.cost import Fitted
    from replay.online import FIGURES

    axes = ((0, 1, 8, 64), (0, 64, 512), (0, 1024, 4096))
    grid = tuple(tuple(tuple(1.0 + 0.2 * r + 0.01 * p + 0.001 * c for c in axes[2]) for p in axes[1]) for r in axes[0])
    profile = Fitted(*axes, grid)  # a stand-in profile, so the test does not spend 10 s calibrating
    monkeypatch.setitem(replay_view._PROFILES, ("tiny", "cpu"), {"continuous": profile, "static": profile})
    open_app(page, app_url, "?mode=continuous&slots=4&seed=4")
    open_replay(page)
    box = page.locator(".bv-online input[type=checkbox]")  # Panel draws the label beside the box, not around it
    box.check()
    expect(box).to_be_checked()
    run_replay(page)
    table = page.locator("[data-replay=online]").first
    expect(table).to_be_visible(timeout=60_000)
    assert table.locator("tr[data-figure]").count() == len(FIGURES)
    errors = table.locator("td[data-error]").all_inner_texts()
    assert len(errors) == 2 * len(FIGURES) and all(e.endswith("%") for e in errors)
    assert page.locator("[data-replay=device]").first.inner_text() == "cpu"
    drawn = page.evaluate(
        "['replay-static', 'replay-continuous'].map(n => Bokeh.index.query_one(v => v.model.name === n) !== null)"
    )
    assert drawn == [True, True]
