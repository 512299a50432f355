"""The page's claims table: every sentence that states a relation carries data-claim, and each has a test here."""

import re
from dataclasses import replace

import numpy as np
import pytest

from app.memory.lesson import MAX_BLOCKS, MIN_BLOCKS, lesson_html
from app.memory.view import BUDGETS, chunked_html
from app.page.words import plural
from app.simulator import chapter, story
from app.simulator.state import SimState
from core import TrafficConfig, compute_metrics, generate, simulate
from core.chapter.chapter_traffic import chapter_traffic
from core.chapter.worked_example import BATCH_TIMEOUT, SLOTS, worked_example, worked_figures
from core.measure.losses import losses
from core.sched.policies import get_policy

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


# The grid a learner can reach from the lessons: every seed of the slider's first 31, the slot counts worth telling
# apart, the default traffic and each lesson's.
GRID_SEEDS = range(31)
GRID_SLOTS = (1, 2, 3, 4, 5, 8)


def _grid_states(clock: str = "steps"):
    """Yield the page's state at every setting of the grid (the default traffic and each lesson's), on `clock`."""
    for slots in GRID_SLOTS:
        for seed in GRID_SEEDS:
            yield SimState(seed=seed, slots=slots, clock=clock)
            for _label, values in story.LESSONS.values():
                yield SimState(seed=seed, slots=slots, clock=clock, **values)


def check_latency_lower():
    """Continuous's latency is never above static's, wherever a learner can look, on steps and on a clock.

    The card (every request arrived by the cursor) at every step of the window, the head-to-head's mean over every
    request to its finish, and on a clock the mean end-to-end latency: over the grid, the chapter's traffic and
    compare's. The card used to count the completed only, and favoured static at `?slots=3&seed=7`.
    """
    from core.measure.metrics import latency_so_far
    from core.sched.timed import timed_metrics

    states = list(_grid_states())
    for state in states:
        static, continuous = state.runs["static"], state.runs["continuous"]
        s, c = compute_metrics(static, WINDOW), compute_metrics(continuous, WINDOW)
        assert c.avg_latency_all <= s.avg_latency_all
        for ran in range(1, WINDOW + 1):
            card = [latency_so_far(run.arrival, run.finish, ran) for run in (static, continuous)]
            assert card[1] is None or card[1] <= card[0], (state.seed, state.slots, ran)
    for state in _grid_states("ms"):
        timed = state.timed_runs()
        assert timed_metrics(timed["continuous"]).e2e_ms["mean"] <= timed_metrics(timed["static"]).e2e_ms["mean"]
    requests = chapter_traffic()
    for slots in GRID_SLOTS:
        static, continuous = simulate(requests, slots, "static"), simulate(requests, slots, "continuous")
        assert compute_metrics(continuous, WINDOW).avg_latency_all <= compute_metrics(static, WINDOW).avg_latency_all


def check_one_slot_kv():
    """Slots = 1: static holds at least as many KV blocks as the paged cache at every step, and more somewhere."""
    for seed in GRID_SEEDS:
        for values in [{}] + [v for _label, v in story.LESSONS.values()]:
            state = SimState(seed=seed, slots=1, **values)
            kv = [state.runs[p].schedule.blocks_by_step() for p in ("static", "continuous")]
            assert len(kv[0]) == len(kv[1]) and (kv[0] >= kv[1]).all() and (kv[0] > kv[1]).any()


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
    "one-slot-kv": check_one_slot_kv,
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
    texts = [story.WHY, story.SPREAD, story.ONE_SLOT, story.ONE_SLOT_KV, story.NOT_FIXED, worked]
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


def _here_words(state: SimState) -> str:
    timed = None
    if state.clock == "ms":
        runs = state.timed_runs()
        timed = (runs["static"], runs["continuous"])
    here = story.here_html(state.runs["static"], state.runs["continuous"], state.window, timed, bool(state.kv_blocks))
    return re.sub(r"<[^>]+>", "", here)


@pytest.mark.parametrize("clock", ["steps", "ms"])
def test_the_here_line_states_what_holds_on_every_view_of_the_grid(clock):
    """Beside the lessons, the line on the view's numbers: identical exactly when the schedules are, each drain.

    The sentences-true issue, items 4 and 5: "static still falls behind" stood beside identical timelines at
    `?lengths=fixed&arrival_window=18&slots=2&seed=0`, and "identical" beside a clock where static finishes later.
    """
    from core.sched.timed import timed_metrics

    for state in _grid_states(clock):
        words = _here_words(state)
        static, continuous = state.runs["static"], state.runs["continuous"]
        assert words.startswith(f"Here ({state.slots} slot")
        if clock == "ms":
            t = state.timed_runs()
            s, c = t["static"], t["continuous"]
            same = (s.start_pass.tolist() == c.start_pass.tolist() and s.finish_pass.tolist() == c.finish_pass.tolist()
                    and s.release_pass.tolist() == s.finish_pass.tolist())  # fmt: skip
            assert ("same pass for pass" in words or "schedules are identical" in words) == same
            if "schedules are identical" not in words:
                assert f"static finishes at {s.drain_ms:,.1f} ms against continuous's {c.drain_ms:,.1f}" in words
            means = (timed_metrics(s).e2e_ms["mean"], timed_metrics(c).e2e_ms["mean"])
            assert f"every request {means[0]:,.1f} ms against {means[1]:,.1f}" in words
            continue
        same = (static.start.tolist() == continuous.start.tolist() and static.finish.tolist() ==
                continuous.finish.tolist() and static.release.tolist() == static.finish.tolist())  # fmt: skip
        assert ("timelines are identical" in words) == same
        if same:
            assert f"both finish at step {static.drain}" in words
            continue
        loss = losses(static, WINDOW)
        assert ("pads nothing" in words) == (loss.padding == 0)
        if loss.padding:
            assert f"pads {loss.padding} slot-step" in words
        if static.drain != continuous.drain:
            assert f"static finishes at step {static.drain} against continuous's {continuous.drain}" in words
        s, c = compute_metrics(static, WINDOW), compute_metrics(continuous, WINDOW)
        assert f"{s.avg_latency_all:.1f} steps against {c.avg_latency_all:.1f}" in words


def test_the_here_line_names_continuous_waits_for_blocks_on_a_pool():
    """On a KV pool the line gives continuous's own empty slots and waits where it has any, from its losses.

    A learner at `?kv_blocks=22` found only static's losses on the line, continuous's 74 empty slot-steps and 124
    request-steps waiting only in the table (issue 47). Over pools, seeds and slots, paged and contiguous.
    """
    said = set()
    for blocks, allocation in ((16, "paged"), (22, "paged"), (34, "paged"), (34, "contiguous"), (60, "contiguous")):
        for seed in (0, 3, 7):
            for slots in (2, 4, 8):
                state = SimState(seed=seed, slots=slots, kv_blocks=blocks, allocation=allocation)
                words, loss = _here_words(state), losses(state.runs["continuous"], state.window)
                waits = bool(loss.idle_while_waiting or loss.boundary_wait)
                assert ("continuous, short of KV blocks" in words) == waits, (blocks, allocation, seed, slots)
                if waits:
                    empty = plural(loss.idle_while_waiting, "slot-step")
                    waiting = plural(loss.boundary_wait, "request-step")
                    assert f"leaves {empty} empty while requests wait for blocks" in words
                    assert f"and keeps requests waiting {waiting}" in words
                said.add(waits)
    assert said == {True, False}
    assert "continuous, short of KV blocks" not in _here_words(SimState(seed=3, slots=4))  # no pool: it never waits


def test_the_reproductions_of_the_lesson_claims_read_true():
    """Items 4, 5 and 7 of the sentences-true issue, as the learner met them."""
    two = SimState(seed=0, slots=2, lengths="fixed", arrival_window=18)
    assert "the two timelines are identical and both finish at step 168" in _here_words(two)
    clock = SimState(seed=4, slots=4, lengths="fixed", arrival_window=1, clock="ms")
    assert (
        "the two schedules are the same pass for pass, yet static finishes at 430.6 ms against continuous's "
        "424.2" in _here_words(clock)
    )
    one = _here_words(SimState(seed=4, slots=1))
    assert "timelines are identical" in one and "Their KV strips still differ: each static row reserves" in one


def test_static_rows_reservation_is_said_one_way_and_is_what_the_engine_reserves():
    """Every sentence on static's KV says STATIC_ROW, and the engine's static strip holds exactly that per row."""
    from app.page.policy_words import words
    from app.simulator.memory_lesson import lesson_html as memory_lesson_html
    from app.simulator.state import pool_memory
    from core.sched.policies import STATIC_ROW, get_policy

    static_caption = words(get_policy("static")).caption_memory
    texts = [story.ONE_SLOT_KV, lesson_html(MIN_BLOCKS), static_caption, memory_lesson_html()]
    for text in texts:
        assert STATIC_ROW in text
        assert "widest prompt" not in text and "each request's prompt plus the longest" not in text
    for seed in range(0, 31, 5):
        config = replace(_default_config(), seed=seed)
        requests, memory = generate(config), pool_memory(config, 0, "paged")  # the page's "unlimited" pool
        reserve = max(r.output_tokens for r in requests)
        for slots in (1, 3, 4):
            run = simulate(requests, slots, "static", memory=memory)
            held = run.schedule.blocks_by_step()
            for begin in sorted(set(run.start.tolist())):
                members = [i for i in range(len(requests)) if run.start[i] == begin]
                width = max(requests[i].prompt_tokens for i in members)
                assert held[begin] == len(members) * memory.blocks_for(width + reserve), (seed, slots, begin)


def test_the_three_average_latencies_are_told_apart_with_the_figures_on_screen():
    """The note under the head-to-head quotes each mode's card at the window's last step and both latency rows.

    The card shows whichever mode the learner picks, so the note speaks of both runs of the pair on screen: static
    and continuous, or shortest first and priority each beside continuous (a learner read continuous's 27.4 "on its
    card" beside shortest first's card, issue 47). Over seeds and every slot count the page offers a lesson at:
    each card's figure is the oracle's playback card, the other two are the table's own cells; where every request
    of a mode finishes inside the window the note says its three agree.
    """
    from app.simulator.views import h2h_full

    from .oracles.progress import playback_texts

    seen = set()
    for seed in range(0, 31, 3):
        requests = generate(replace(_default_config(), seed=seed, high_priority_share=0.3))
        for slots in (1, 2, 3, 4, 5, 8):
            runs = {mode: simulate(requests, slots, mode) for mode in ("static", "continuous", "sjf", "priority")}
            for pair in (("static", "continuous"), ("continuous", "sjf"), ("continuous", "priority")):
                seen |= _averages_said(h2h_full(runs[pair[0]], runs[pair[1]], WINDOW, None), runs, pair, playback_texts)
    # every sentence is reached on this grid, under every mode
    assert seen == {(p, s) for p in ("static", "continuous", "sjf", "priority") for s in ("agree", "three")}


def _averages_said(view: dict, runs: dict, pair: tuple, playback_texts) -> set:
    """Check the averages note of one full head-to-head against its cells and each run's card; return what it said."""
    seen = set()
    note = view["note"].split('class="bv-muted bv-averages"')[1]
    rows = {row[0]: row for row in view["rows"]}
    for column, run in ((2, runs[pair[0]]), (3, runs[pair[1]])):
        assert view["pair"][column - 2] == run.policy
        said = re.search(rf'<span data-averages="(\w+)" data-policy="{run.policy}">(.*?)</span>', note)
        card = re.search(r'data-stat="avg_latency">([^<]+)<', playback_texts(run, WINDOW)[WINDOW - 1])[1]
        every = rows["avg_latency_all"][column]
        done = re.search(r">([^<]+)</span>", rows[None][column])[1]
        if said[1] == "agree":
            assert card == every == done and f"read the same: <b>{card}</b> steps" in said[2], pair
            assert (run.finish <= WINDOW).all()  # finish is exclusive: 64 is done by step 63
        else:
            assert re.findall(r"<b>([^<]+)</b>", said[2]) == [card, every, done], (pair, run.policy)
            assert f"the last finishes at step {run.drain}" in said[2]
            # the card's reading is said at its step and for its mode: the card shows the mode picked (issue 47)
            label = get_policy(run.policy).label
            assert f"on the card with {label} picked, at step {WINDOW - 1};" in said[2]
            assert not (run.finish <= WINDOW).all()
        seen.add((run.policy, said[1]))
    return seen


def test_empty_slots_are_counted_only_as_many_as_requests_wait():
    """The empty slot-steps the Here line counts are those a waiting request could have taken, never more.

    A learner's read (issue 47): at `?seed=30&slots=16` "leaves slots empty for 532 slot-steps while requests wait"
    counted 14 empty slots beside at most 10 waiting. Each step counts the fewer of the two, so the slot-steps never
    exceed the request-steps waited beside an empty slot.
    """
    from core.measure.losses import waiting_per_step
    from core.states import IDLE

    for seed, slots in ((30, 16), (4, 4), (0, 2), (7, 12)):
        state = SimState(seed=seed, slots=slots)
        run = state.runs["static"]
        loss = losses(run, WINDOW)
        counts, waiting = run.counts_per_step(WINDOW), waiting_per_step(run, WINDOW)
        assert loss.idle_while_waiting == int(np.minimum(counts[IDLE], waiting).sum()) <= loss.boundary_wait
        words = _here_words(state)
        if loss.idle_while_waiting:
            assert f"leaves {loss.idle_while_waiting} slot-steps empty that waiting requests could have taken" in words
    assert losses(SimState(seed=30, slots=16).runs["static"], WINDOW).idle_while_waiting == 322
    # On a KV pool a request also waits for blocks: the line says so (it said "for a batch boundary" beside ⊘ waits)
    assert "request-steps for a batch boundary or for KV blocks" in _here_words(SimState(kv_blocks=22))
    assert "request-steps for a batch boundary;" in _here_words(SimState())
