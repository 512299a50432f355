"""Keyboard, playback, deep links, bad input and trace upload, in the browser."""

import re

from playwright.sync_api import expect

from core import simulate
from core.workload.traces import parse_trace

from .helpers import core_run, open_app, text_of, wait_for_timeline
from .pixels import read_timeline

PLAYBACK_AT_20 = "?mode=static&slots=4&seed=4&step=20"


def test_keyboard_moves_the_slots_slider(page, page_errors, app_url):
    """Focus the slots slider, press ArrowRight twice: the picture becomes the 6-slot timeline."""
    open_app(page, app_url, "?mode=continuous&slots=4&seed=4")
    handle = page.locator("input[name=slots]")
    handle.focus()
    handle.press("ArrowRight")
    handle.press("ArrowRight")
    wait_for_timeline(page, core_run("continuous", 6, 4).timeline_strings(64), 6)
    assert re.search(r"slots=6", page.url)


def test_deep_link_opens_mid_playback(page, page_errors, app_url):
    """?step=20 opens at step 20: cells up to and including it are drawn, later ones hidden behind the curtain."""
    open_app(page, app_url, PLAYBACK_AT_20)
    expect(page.locator(".bv-step").first).to_have_text("step 20")
    full = core_run("static", 4, 4).timeline_strings(64)
    assert read_timeline(page, 4, 64) == [row[:21] + "-" * 43 for row in full]


def test_playback_reveals_cells_in_order(page, page_errors, app_url):
    """Next advances one step; play keeps advancing; every frame reveals exactly the cells up to the cursor's step."""
    open_app(page, app_url, PLAYBACK_AT_20)
    full = core_run("static", 4, 4).timeline_strings(64)
    page.get_by_role("button", name="Step ▸").first.click()
    expect(page.locator(".bv-step").first).to_have_text("step 21")
    assert read_timeline(page, 4, 64) == [row[:22] + "-" * 42 for row in full]
    page.get_by_role("button", name="▶ Play").first.click()
    expect(page.locator(".bv-step").first).not_to_have_text("step 21", timeout=5000)
    page.get_by_role("button", name="❚❚ Pause").first.click()
    step = int(page.locator(".bv-step").first.get_attribute("data-step"))
    assert 21 < step <= 63
    page.wait_for_timeout(300)
    step = int(page.locator(".bv-step").first.get_attribute("data-step"))
    assert read_timeline(page, 4, 64) == [row[: step + 1] + "-" * (63 - step) for row in full]


def test_bad_url_values_show_a_message_and_clamp(page, page_errors, app_url):
    """Out-of-range values are clamped, junk is rejected; both say so, and the app still renders."""
    open_app(page, app_url, "?slots=99&seed=abc&mode=turbo")
    expect(page.locator(".bv-message").first).to_contain_text("mode='turbo'")  # it may paint after the canvas
    message = text_of(page, ".bv-message")
    assert "slots=99 is out of range 1..64; using 64" in message
    assert "seed='abc' is not a whole number (allowed 0..99); kept 4" in message
    assert "mode='turbo' is not allowed (use static or continuous or sjf or priority)" in message
    assert read_timeline(page, 64, 64) == core_run("continuous", 64, 4).timeline_strings(64)


def test_bad_trace_upload_keeps_the_traffic(page, page_errors, app_url, tmp_path):
    """A bad file shows the parser's line-and-column message and leaves the picture as it was."""
    open_app(page, app_url, "?mode=static&slots=4&seed=4")
    before = read_timeline(page, 4, 64)
    bad = tmp_path / "bad.csv"
    bad.write_text("arrival,output_tokens\n0,3\n2,zero\n")
    page.locator("input[type=file]").first.set_input_files(str(bad))
    message = "bad.csv:3:2: output_tokens must be a whole number in 1..1,000,000"
    expect(page.locator(".bv-message").first).to_contain_text(message)
    assert read_timeline(page, 4, 64) == before


def test_good_trace_upload_draws_that_trace(page, page_errors, app_url, tmp_path):
    """A good file replaces the traffic; the drawn timeline equals the core's schedule of that file."""
    open_app(page, app_url, "?mode=static&slots=3&seed=4")
    text = "id,arrival,output_tokens\nx,0,5\ny,0,2\nz,1,9\nw,4,3\n"
    good = tmp_path / "good.csv"
    good.write_text(text)
    page.locator("input[type=file]").first.set_input_files(str(good))
    expected = simulate(parse_trace(text), 3, "static").timeline_strings(64)
    wait_for_timeline(page, expected, 3)


def test_deep_link_with_a_longer_window(page, page_errors, app_url):
    """?window=100&step=80 opens at step 80 of 100 (past the default window), drawing the core's timeline."""
    open_app(page, app_url, "?mode=continuous&slots=2&seed=4&window=100&step=80")
    expect(page.locator(".bv-step").first).to_have_text("step 80")
    note = " of 0–99: the cards count steps 0–80, the head to head all 100 steps"
    expect(page.locator(".bv-step-note").first).to_have_text(note)
    full = core_run("continuous", 2, 4).timeline_strings(100)
    assert read_timeline(page, 2, 100) == [row[:81] + "-" * 19 for row in full]


def test_mean_output_length_turns_the_load_up_and_down(page, page_errors, app_url):
    """?mean_tokens=8 draws the core's schedule of lighter traffic; the slider is on the page with its value."""
    from core import TrafficConfig, generate

    open_app(page, app_url, "?mode=continuous&slots=4&seed=4&mean_tokens=8")
    light = simulate(generate(TrafficConfig(seed=4, mean_tokens=8)), 4, "continuous").timeline_strings(64)
    assert read_timeline(page, 4, 64) == light
    assert light != core_run("continuous", 4, 4).timeline_strings(64)
    expect(page.get_by_text("Mean output length (tokens)").first).to_be_visible()
