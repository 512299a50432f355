"""sjf and priority on the served page: drawn as the core runs them; the caption's claim true where it is made."""

import pytest
from playwright.sync_api import expect

from core import TrafficConfig, compute_metrics, generate, simulate
from core.sched.timed import simulate_timed

from .helpers import open_app
from .pixels import read_timeline

# (mode, slots, seed, high priority %, requests): a heavy load, so the queue's order decides who runs when.
SETTINGS = [("sjf", 3, 6, 0, 12), ("priority", 2, 3, 30, 24), ("sjf", 2, 9, 30, 24)]


def _runs(mode: str, slots: int, seed: int, share: int, requests: int):
    traffic = generate(TrafficConfig(seed=seed, requests=requests, high_priority_share=share / 100))
    return simulate(traffic, slots, mode), simulate(traffic, slots, "continuous")


@pytest.mark.parametrize("mode,slots,seed,share,requests", SETTINGS)
def test_an_ordered_policy_is_drawn_as_the_core_runs_it(page, page_errors, app_url, mode, slots, seed, share, requests):
    """Both timelines (the mode above, continuous beneath) equal the core's runs, cell for cell, and they differ."""
    query = f"?mode={mode}&slots={slots}&seed={seed}&priority_share={share}&requests={requests}"
    open_app(page, app_url, query)
    mine, fcfs = _runs(mode, slots, seed, share, requests)
    assert mine.start.tolist() != fcfs.start.tolist()  # the order really changes who runs when
    assert read_timeline(page, slots, 64) == mine.timeline_strings(64)
    assert read_timeline(page, slots, 64, name="timeline-other") == fcfs.timeline_strings(64)
    full = page.locator(".bv-h2h-full")  # every figure, behind its disclosure: of the same two runs (issue 47)
    for policy, run in ((mode, mine), ("continuous", fcfs)):  # each to its finish: the order's effect on latency
        latency = compute_metrics(run, 64).avg_latency_all
        expect(page.locator(f"[data-h2h={policy}-avg_latency_all]").first).to_have_text(f"{latency:.1f}")
        expect(full.locator(f"[data-h2h={policy}-avg_latency_all]")).to_have_text(f"{latency:.1f}")
    expect(full.locator("[data-h2h^=static-]")).to_have_count(0)
    expect(page.locator(".bv-caption").first).not_to_contain_text("runs exactly as")


@pytest.mark.parametrize("seed", [0, 1, 2, 3, 4, 5])
def test_the_caption_says_runs_exactly_as_only_where_they_do(page, page_errors, app_url, seed):
    """Over seeds and both ordered modes: "runs exactly as continuous batching" iff the core's runs are equal."""
    for mode, share in (("priority", 0 if seed % 2 else 20), ("sjf", 0)):
        open_app(page, app_url, f"?mode={mode}&slots=2&seed={seed}&priority_share={share}")
        mine, fcfs = _runs(mode, 2, seed, share, 12)
        same = all((getattr(mine, k) == getattr(fcfs, k)).all() for k in ("start", "finish", "slot"))
        caption = page.locator(".bv-caption").first
        if same:
            expect(caption).to_contain_text("runs exactly as continuous batching")
        else:
            expect(caption).not_to_contain_text("runs exactly as")


def test_an_ordered_mode_gets_its_own_pairs_axis_and_kv_scale(page, page_errors, app_url):
    """Beside continuous, sjf's clock axis ends at the later of their two drains (not static's).

    On steps the KV strips share the larger of their two peaks (not static's reserved rows).
    """
    from dataclasses import replace

    from app.page.runs import arrival_step_ms
    from app.simulator.state import shared_runs
    from core.clock.hardware import DEFAULT_ACCELERATOR, DEFAULT_MODEL_SHAPE, cost_model

    requests = generate(TrafficConfig(seed=4))
    step = arrival_step_ms(DEFAULT_ACCELERATOR, DEFAULT_MODEL_SHAPE)
    timed = [replace(r, arrival=round(r.arrival * step)) for r in requests]
    cost = cost_model(DEFAULT_ACCELERATOR, DEFAULT_MODEL_SHAPE)
    drains = {p: simulate_timed(timed, 4, p, cost).drain_ms for p in ("sjf", "continuous", "static")}
    assert drains["static"] > max(drains["sjf"], drains["continuous"])  # so the two axes really differ
    open_app(page, app_url, "?clock=ms&mode=sjf&slots=4&seed=4")
    end = max(drains["sjf"], drains["continuous"])
    page.wait_for_function(f"Math.abs(window.__bvWidget.timelines[0].end - {end}) < 1e-6", timeout=15_000)
    assert page.evaluate("window.__bvWidget.timelines[1].end") == pytest.approx(end)
    open_app(page, app_url, "?mode=sjf&slots=4&seed=4&step=63")
    runs = shared_runs(TrafficConfig(seed=4), 4, 0)  # the page's own runs (blocks of 8 tokens)
    peak = max(int(runs[p].schedule.blocks_by_step().max()) for p in ("sjf", "continuous"))
    assert peak < max(int(run.schedule.blocks_by_step().max()) for run in runs.values())  # static reserves more
    assert page.evaluate("window.__bvWidget.timelines[0].kvScale") == peak
    assert page.evaluate("window.__bvWidget.timelines[1].kvScale") == peak
