"""The simulator on a KV pool: each mode's run is the memory engine's, and its log says memory's decisions."""

from __future__ import annotations

import numpy as np
import pytest

from app.page.url import parse_query
from app.simulator import memory_lesson
from app.simulator.state import BLOCK_SIZE, CHAPTER_NAME, SimState, least_pool, pool_memory, shared_runs
from core import Request, TrafficConfig, generate, simulate
from core.chapter.chapter_traffic import chapter_traffic
from core.kv.memory import MemoryConfig
from core.sched.engine import as_run, memory_waits, schedule
from tests.oracles.loop_view import loop_texts
from tests.oracles.progress import progress_table

TRAFFICS = [TrafficConfig(seed=seed) for seed in (0, 4, 37)] + [tuple(chapter_traffic())]


def _requests(traffic):
    return generate(traffic) if isinstance(traffic, TrafficConfig) else list(traffic)


@pytest.mark.parametrize("traffic", TRAFFICS)
@pytest.mark.parametrize("slots", [1, 4, 16])
def test_an_unlimited_pool_gives_todays_runs(traffic, slots):
    """Pool 0 (unlimited): the memory engine's runs are the step simulator's, interval for interval, word for word."""
    runs = shared_runs(traffic, slots, 0)
    for policy, run in runs.items():
        fast = simulate(_requests(traffic), slots, policy)
        for name in ("start", "finish", "slot", "release"):
            assert np.array_equal(getattr(run, name), getattr(fast, name)), (policy, name)
        assert run.cells is None and run.schedule.preemptions == 0
        assert [run.describe_step(t) for t in range(run.drain + 1)] == [
            fast.describe_step(t) for t in range(run.drain + 1)
        ]


@pytest.mark.parametrize("traffic", TRAFFICS)
def test_the_least_pool_fits_every_mode_and_one_less_does_not(traffic):
    """least_pool is the smallest pool every mode shown can run the traffic on."""
    requests, least = _requests(traffic), least_pool(traffic)
    for policy in ("static", "continuous"):
        schedule(requests, 4, policy, MemoryConfig(kv_blocks=least, block_size=BLOCK_SIZE))
    with pytest.raises(ValueError, match="needs"):
        for policy in ("static", "continuous"):
            schedule(requests, 4, policy, MemoryConfig(kv_blocks=least - 1, block_size=BLOCK_SIZE))


def test_a_pool_below_the_least_is_raised_and_the_state_says_which():
    """Asking for 3 blocks runs on the least the traffic fits in; the state's pool is the one the runs used."""
    state = SimState(kv_blocks=3)
    least = least_pool(state.traffic_key())
    assert least > 3 and state.pool == least
    assert all(run.schedule.memory.kv_blocks == least for run in state.runs.values())
    state.kv_blocks = 0
    assert state.pool is None


def test_a_limited_pool_runs_the_memory_engine():
    """Asking 10 blocks (paged): the runs are the engine's on the pool used, and the continuous one preempts."""
    state = SimState(kv_blocks=10)
    memory = pool_memory(state.traffic_key(), 10, "paged")
    for policy, run in state.runs.items():
        engine = as_run(schedule(run.requests, 4, policy, memory, record_pool=True))
        assert np.array_equal(run.start, engine.start) and np.array_equal(run.finish, engine.finish)
    assert state.runs["continuous"].schedule.preemptions > 0
    state.allocation = "contiguous"
    assert state.runs["continuous"].schedule.memory.allocation == "contiguous"


def _preempting_run():
    run = shared_runs(TrafficConfig(seed=4), 4, 0, 10, "paged")["continuous"]
    assert run.schedule.preemptions >= 2
    return run


def test_each_preemption_ends_a_stay_and_the_log_says_why():
    """Every stay but a request's last ends in a preemption the log names with the engine's figures."""
    run = _preempting_run()
    stays = run.stays.tolist()
    ended = [
        (hi, i, slot) for k, (i, slot, lo, hi, _) in enumerate(stays) if k + 1 < len(stays) and stays[k + 1][0] == i
    ]
    preempts = [d for d in run.log if d.kind == "preempt"]
    assert [(d.step, d.request, d.slot) for d in preempts] == sorted(ended)
    events = [e for e in run.schedule.events if e.kind == "preempt"]
    assert sorted((d.request, d.tokens, d.other) for d in preempts) == sorted(
        (e.request, e.tokens, e.needed_by) for e in events
    )
    d = preempts[0]
    names = [r.id for r in run.requests]
    assert (
        f"no free block for {names[d.other]}; {names[d.request]} preempted from slot {d.slot}, {d.tokens} token"
        in run.describe_step(d.step)
    )
    readmitted = [s for s in stays if s[2] > run.start[s[0]]]
    assert readmitted and all(
        f"{names[i]} readmitted to slot {slot}, recomputing its KV" in run.describe_step(lo)
        for i, slot, lo, _, _ in readmitted
    )


def test_the_victim_is_the_one_admitted_last():
    """The memory caption's claim: a request short of a block preempts the running request admitted last."""
    run = _preempting_run()
    stays = run.stays.tolist()
    for d in (d for d in run.log if d.kind == "preempt"):
        running = [s for s in stays if s[2] < d.step <= s[4]]
        victim = next(s for s in running if s[0] == d.request and s[3] == d.step)
        assert victim[2] == max(s[2] for s in running)


@pytest.mark.parametrize("allocation", ["paged", "contiguous"])
def test_waits_in_the_log_are_the_engines_waits(allocation):
    """Each step a request waits for memory beside an empty slot is one 'waits for memory' decision."""
    runs = shared_runs(TrafficConfig(seed=4), 4, 0, 12, allocation)
    run = runs["continuous"]
    waits = {(w.step, w.request, w.needed, w.free) for w in memory_waits(run.schedule)}
    logged = {(d.step, d.request, d.tokens, d.free) for d in run.log if d.kind == "wait"}
    assert logged == waits and logged
    # Static says it once, as its batch forms short: one more row (the head's) would not fit the pool.
    static = runs["static"]
    pool = static.schedule.memory.kv_blocks
    said = [d for d in static.log if d.kind == "wait"]
    assert said and {d.step for d in said} == {w.step for w in memory_waits(static.schedule)} & set(
        static.start.tolist()
    )
    for d in said:
        rows = int((static.start == d.step).sum()) + 1
        assert d.other == rows and rows * d.tokens > pool


def test_the_kv_line_counts_the_engines_blocks_and_preemptions():
    """The KV line's held blocks are the engine's at each step, its peak their running maximum."""
    run = _preempting_run()
    pool = run.schedule.memory.kv_blocks
    table = progress_table(run, 96, pool)
    kv = run.schedule.blocks_by_step()
    preempt_steps = [d.step for d in run.log if d.kind == "preempt"]
    for t in (0, 20, 31, 60, 95):
        held = int(kv[t]) if t < len(kv) else 0
        line = table["kv"][t]
        assert f'<b data-kv="held">{held}</b> of {pool} blocks' in line
        assert f'<b data-kv="peak">{int(kv[: t + 1].max())}</b>' in line
        assert f'<b data-kv="preemptions">{sum(s <= t for s in preempt_steps)}</b>' in line


def test_the_loop_lights_preemption_not_retirement():
    """At a preemption the loop's preempt line is lit with the victim; retire lights only for the finished."""
    run = _preempting_run()
    d = next(d for d in run.log if d.kind == "preempt")
    loop = loop_texts(run, 96, True)[d.step]
    name = run.requests[d.request].id
    assert 'bv-lit" data-line="preempt"' in loop and f"← {name} preempted" in loop
    finished_now = [x for x in run.log if x.kind == "finish" and x.step == d.step]
    assert ('bv-lit" data-line="retire"' in loop) == bool(finished_now)


def test_pool_urls_are_checked():
    """A bad pool in a URL gets one message naming what is allowed; a good one is taken."""
    state = SimState()
    values, messages = parse_query({"kv_blocks": "12", "allocation": "contiguous"}, state)
    assert values == {"kv_blocks": 12, "allocation": "contiguous"} and not messages
    values, messages = parse_query({"kv_blocks": "lots"}, state)
    assert not values and messages == ["URL: kv_blocks='lots' is not a whole number (allowed 0..1024); kept 0."]
    values, messages = parse_query({"kv_blocks": "99999", "allocation": "ring"}, state)
    assert values == {"kv_blocks": 1024}
    assert messages == [
        "URL: kv_blocks=99999 is out of range 0..1024; using 1024.",
        "URL: allocation='ring' is not allowed (use paged or contiguous); kept paged.",
    ]


def _running_rows(run, window: int = 64) -> float:
    grid = run.grid(window)
    return float((grid != 0).sum(axis=0).mean())


def test_the_memory_lessons_sentences_hold_on_its_runs():
    """Each relation the lesson states is true of the runs its buttons show (the chapter's traffic, 4 slots)."""
    f = memory_lesson.lesson()
    traffic = tuple(chapter_traffic())
    free = shared_runs(traffic, 4, 0)
    assert f.pool == free["continuous"].schedule.blocks_by_step().max() < f.static_peak
    paged = shared_runs(traffic, 4, 0, f.pool, "paged")
    contiguous = shared_runs(traffic, 4, 0, f.pool, "contiguous")
    # "Paged ... nothing changes": the same schedule as unlimited memory, request for request.
    for name in ("start", "finish", "slot"):
        assert np.array_equal(getattr(paged["continuous"], name), getattr(free["continuous"], name))
    assert paged["continuous"].schedule.preemptions == 0 and f.paged_waits == 0
    # "Contiguous ... fewer run at once", later, with waits beside empty slots, some of them holes.
    assert _running_rows(contiguous["continuous"]) < _running_rows(paged["continuous"])
    assert f.contiguous_drain == contiguous["continuous"].drain > f.paged_drain
    assert 0 < f.contiguous_holes <= f.contiguous_waits
    assert f.static_drain > f.unlimited_drain["static"] > f.paged_drain
    # "Squeeze the pool ... paged continuous batching preempts."
    assert f.tight_pool == least_pool(traffic) < f.pool and f.tight_preemptions > 0
    html = memory_lesson.lesson_html()
    for key in ("paged_drain", "contiguous_drain", "static_drain", "tight_drain"):
        assert f'data-memory="{key}">{getattr(f, key)}</b>' in html


def test_the_lessons_table_is_what_the_simulator_shows_on_each_pool():
    """Each cell (all done at step, preemptions) equals the run the simulator shows for that pool and allocation."""
    rows = dict(memory_lesson.lesson_table())
    f = memory_lesson.lesson()
    for label, blocks in (("unlimited", 0), (f"{f.pool} blocks", f.pool), (f"{f.tight_pool} blocks", f.tight_pool)):
        for k, (allocation, policy) in enumerate(memory_lesson.COLUMNS):
            state = SimState(kv_blocks=blocks, allocation=allocation)
            state.use_trace(chapter_traffic(), CHAPTER_NAME)
            run = state.runs[policy]
            assert rows[label][k] == (run.drain, run.schedule.preemptions), (label, allocation, policy)
    assert f'data-memory-cell="{f.tight_pool} blocks|0">{f.tight_drain} ({f.tight_preemptions} preemptions)' in (
        memory_lesson.table_html()
    )


def test_the_traffic_label_says_what_the_seed_beside_it_does():
    """A learner read "Traffic seed 4" beside the chapter's traffic as that traffic's seed: the label says what it does.

    On the chapter's traffic a new seed generates traffic (and it does); on an upload the seed is not used (and
    moving it changes nothing).
    """
    state = SimState(slots=4, seed=4)
    state.use_trace(chapter_traffic(), CHAPTER_NAME)
    assert state.traffic_label().endswith("(a new seed generates traffic)")
    state.seed = 5
    assert state.trace is None and state.traffic_label().startswith("Traffic: generated")
    upload = [Request("A", 0, 3), Request("B", 1, 2)]
    state.use_trace(upload, "mine.csv")
    assert state.traffic_label() == "Traffic: mine.csv, 2 requests (the seed is not used)"
    state.seed = 6
    assert state.traffic() == upload and state.traffic_label().startswith("Traffic: mine.csv")
