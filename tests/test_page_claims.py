"""The page's claims table: every sentence that states a relation carries data-claim, and each has a test here."""

import re
from dataclasses import replace

import pytest

from app import chapter, story
from app.memory_view import BUDGETS, MAX_BLOCKS, MIN_BLOCKS, chunked_html, lesson_html
from app.state import SimState
from core import TrafficConfig, compute_metrics, generate, simulate
from core.chapter_traffic import chapter_traffic
from core.losses import losses
from core.worked_example import BATCH_TIMEOUT, SLOTS, worked_example, worked_figures

from .test_memory_view import check_chunk_claims, check_memory_claims

SEEDS = range(100)
WINDOW = 64


def _default_config() -> TrafficConfig:
    """Return the generator config a fresh page's settings give (the traffic a moved seed switches to)."""
    return SimState().traffic_key()


def _runs(config: TrafficConfig, slots: int = story.LESSON_SLOTS):
    requests = generate(config)
    return simulate(requests, slots, "static"), simulate(requests, slots, "continuous")


def _lesson_config(key: str, seed: int) -> TrafficConfig:
    _label, values = story.LESSONS[key]
    return replace(_default_config(), seed=seed, **values)


def check_fixed_queued_identical():
    """Fixed lengths, all queued: identical timelines and head-to-head figures, and static loses nothing."""
    for seed in SEEDS:
        static, continuous = _runs(_lesson_config("fixed-queued", seed))
        assert static.timeline_strings(WINDOW) == continuous.timeline_strings(WINDOW)
        s, c = compute_metrics(static, WINDOW), compute_metrics(continuous, WINDOW)
        assert (s.completed, s.utilisation, s.avg_latency_all) == (c.completed, c.utilisation, c.avg_latency_all)
        loss = losses(static, WINDOW)
        assert (loss.padding, loss.idle_while_waiting, loss.boundary_wait) == (0, 0, 0)


def check_heavy_queued_gap():
    """Heavy-tailed on the same queue: static pads again and falls behind (latency over every request)."""
    for seed in SEEDS:
        static, continuous = _runs(_lesson_config("heavy-queued", seed))
        s, c = compute_metrics(static, WINDOW), compute_metrics(continuous, WINDOW)
        assert losses(static, WINDOW).padding > 0
        assert c.avg_latency_all < s.avg_latency_all and continuous.drain <= static.drain


def check_fixed_spread_boundary():
    """Fixed lengths over 18 steps: no padding, yet empty slots while requests wait, a boundary wait, and a gap."""
    for seed in SEEDS:
        static, continuous = _runs(_lesson_config("fixed-spread", seed))
        loss = losses(static, WINDOW)
        assert loss.padding == 0 and loss.idle_while_waiting > 0 and loss.boundary_wait > 0
        s, c = compute_metrics(static, WINDOW), compute_metrics(continuous, WINDOW)
        assert c.utilisation > s.utilisation and c.avg_latency_all < s.avg_latency_all


def check_one_slot_identical():
    """Slots = 1: the two timelines are identical, on every seed of the default traffic and of each lesson."""
    configs = [replace(_default_config(), seed=seed) for seed in SEEDS]
    configs += [_lesson_config(key, seed) for key in story.LESSONS for seed in range(10)]
    for requests in [generate(config) for config in configs] + [chapter_traffic()]:
        static, continuous = simulate(requests, 1, "static"), simulate(requests, 1, "continuous")
        assert static.timeline_strings() == continuous.timeline_strings()


def check_latency_lower():
    """Continuous's latency over every request is lower, and never favours the mode that completes fewer."""
    configs = [replace(_default_config(), seed=seed) for seed in SEEDS]
    configs += [_lesson_config(key, seed) for key in story.LESSONS for seed in SEEDS]
    for requests in [generate(config) for config in configs] + [chapter_traffic()]:
        for slots in (2, 4, 8):
            static, continuous = simulate(requests, slots, "static"), simulate(requests, slots, "continuous")
            s, c = compute_metrics(static, WINDOW), compute_metrics(continuous, WINDOW)
            assert c.avg_latency_all <= s.avg_latency_all
            if s.completed < c.completed:
                assert s.avg_latency_all > c.avg_latency_all


def check_gain_2_4x():
    """Compare's default chat-shaped traffic: continuous drains 2-4x faster (the figure the page prints)."""
    assert 2.0 <= chapter.compare_figures()["drain_ratio"] <= 4.0


def check_worked_figures():
    """The worked example's caption figures, as the page states them, are the chapter's eight."""
    requests = worked_example()
    figures = worked_figures(
        simulate(requests, SLOTS, "static", BATCH_TIMEOUT), simulate(requests, SLOTS, "continuous")
    )
    assert list(figures.values()) == [30, 12, 11, 22, 16, 11, 10, 14]


def check_memory_all_pools():
    """The memory view's sentences, at every pool size its slider offers (tests/test_memory_view.py)."""
    for blocks in range(MIN_BLOCKS, MAX_BLOCKS + 1):
        check_memory_claims(blocks)


def check_chunk_all_budgets():
    """The huge-prompt sentences at every budget the page offers (tests/test_memory_view.py)."""
    for budget in BUDGETS:
        check_chunk_claims(budget)


CHECKS = {
    "fixed-queued-identical": check_fixed_queued_identical,
    "heavy-queued-gap": check_heavy_queued_gap,
    "fixed-spread-boundary": check_fixed_spread_boundary,
    "one-slot-identical": check_one_slot_identical,
    "latency-lower": check_latency_lower,
    "gain-2-4x": check_gain_2_4x,
    "worked-figures": check_worked_figures,
    **{f"memory-{key}": check_memory_all_pools for key in ("paged", "contiguous", "static", "gap")},
    "chunk-stall": check_chunk_all_budgets,
    "chunk-budget": check_chunk_all_budgets,
    "chunk-context": check_chunk_all_budgets,
}


def _page_texts() -> str:
    requests = worked_example()
    worked = story.worked_html(
        worked_figures(simulate(requests, SLOTS, "static", BATCH_TIMEOUT), simulate(requests, SLOTS, "continuous"))
    )
    texts = [story.WHY, story.SPREAD, story.ONE_SLOT, story.NOT_FIXED, worked]
    texts += [chapter.restructured_loop_html(), chapter.build_batch_html(), chapter.affordable_html()]
    texts += [chapter.spread_argument_html(), chapter.run_locally_html(), chapter.PRODUCTION, chapter.WHATS_NEXT]
    texts += [lesson_html(blocks) for blocks in range(MIN_BLOCKS, MAX_BLOCKS + 1)]
    texts += [chunked_html(budget) for budget in BUDGETS]
    return "".join(texts)


def test_every_claim_on_the_page_has_a_check():
    """Each data-claim in the page's texts names a check here, and every check is a claim the page makes."""
    claims = set(re.findall(r'data-claim="([^"]+)"', _page_texts()))
    assert claims == set(CHECKS)


@pytest.mark.parametrize("claim", sorted(CHECKS))
def test_the_claim_holds_on_its_view(claim):
    """The claim's sentence is true on the numbers of the view it describes."""
    CHECKS[claim]()


def test_the_lesson_buttons_set_what_their_claims_assume():
    """Each lesson's button label names the settings its claim is checked on."""
    for _key, (label, values) in story.LESSONS.items():
        assert ("all queued" in label) == (values["arrival_window"] == 1)
        assert label.lower().startswith(values["lengths"][:5].replace("heavy", "heavy"))
