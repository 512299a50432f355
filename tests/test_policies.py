"""A policy is one object: a toy policy runs end to end from this file alone; every policy equals the oracle."""

import json
import re
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from core import Request, compare, simulate
from core.clock.cost import UnitCost
from core.kv.memory import MemoryConfig
from core.sched.engine import as_run, schedule
from core.sched.policies import REGISTRY, Policy, get_policy, register, unregister
from core.sched.timed import simulate_timed
from core.states import STATE_NUMBERS
from core.workload.traffic import TrafficConfig, generate
from tests.oracles.memory_loop import simulate_memory_per_step

from .test_memory import _pool_for

ROOT = Path(__file__).resolve().parent.parent
POLICIES = tuple(REGISTRY)  # the registered ones, before any test adds its own


class LongestFirst(Policy):
    """A toy: continuous batching that admits the longest waiting answer first (then arrival)."""

    name = "longest"
    label = "longest first"
    summary = "continuous, the longest answer first"
    queue_words = "longest answer first"

    def queue_key(self, request: Request) -> int:
        """Return minus the output length: the longest first."""
        return -request.output_tokens


@pytest.fixture
def toy():
    """Register the toy policy for one test, and take it out after."""
    register(LongestFirst())
    yield "longest"
    unregister("longest")


TOY_TRAFFIC = [Request("A", 0, 2, 3), Request("B", 0, 5, 1), Request("C", 0, 3, 2), Request("D", 1, 9, 0)]


def test_a_toy_policy_runs_end_to_end_from_one_file(toy, tmp_path, capsys):
    """Registered here only: both clocks, a limited pool, the CLI's JSON, the view data, the head-to-head."""
    from app.page.policy_words import FALLBACK_COLOUR, words
    from app.simulator.widget_data import run_arrays
    from core.cli.commands import main

    # One slot: B (5) first, then D (9, arrived at 1) ahead of C (3) and A (2): the longest waiting answer each time.
    run = simulate(TOY_TRAFFIC, 1, toy)
    assert run.policy == "longest" and run.start.tolist() == [17, 0, 14, 5]
    assert simulate(TOY_TRAFFIC, 1, "continuous").start.tolist() == [0, 2, 7, 10]  # arrival order, for contrast
    timed = simulate_timed(TOY_TRAFFIC, 1, toy, UnitCost())
    assert timed.policy == "longest" and timed.start_ms.tolist() == run.start.tolist()
    memory = MemoryConfig(kv_blocks=4, block_size=4)
    limited = as_run(schedule(TOY_TRAFFIC, 2, toy, memory))
    strings, events, _, _ = simulate_memory_per_step(TOY_TRAFFIC, 2, toy, memory)
    assert limited.timeline_strings() == strings and limited.policy == "longest"

    trace = tmp_path / "toy.csv"
    trace.write_text(
        "arrival,output_tokens,prompt_tokens\n"
        + "".join(f"{r.arrival},{r.output_tokens},{r.prompt_tokens}\n" for r in TOY_TRAFFIC)
    )
    assert main(["simulate", "--trace", str(trace), "--slots", "1", "--policy", toy, "--json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert doc["policy"] == "longest" and doc["policy_traits"]["label"] == "longest first"
    assert [r["start"] for r in doc["requests"]] == [17, 0, 14, 5]
    assert main(["compare", "--trace", str(trace), "--slots", "1", "--policies", f"static,{toy}", "--json"]) == 0
    both = json.loads(capsys.readouterr().out)
    assert set(both) >= {"static", "longest", "ratios"} and both["longest"]["drain_steps"] == 19

    view = run_arrays(run)
    page_traits = {**LongestFirst().traits(), "colour": FALLBACK_COLOUR}  # no words of its own: the page's fallback
    assert view["policy"] == "longest" and view["traits"] == page_traits
    assert words(run.rules).caption == "Longest first: continuous, the longest answer first."
    assert view["states"] == STATE_NUMBERS  # the cell states travel with the run, defined once
    assert view["loop"][2][1].endswith("# longest answer first; prompts join as prefill")  # its own words
    assert view["start"] == [17, 0, 14, 5]
    h2h = compare(simulate(TOY_TRAFFIC, 1, "static"), run)
    assert h2h.names == ("static", "longest") and h2h["longest"].drain_steps == 19


def test_a_name_not_registered_is_refused_on_every_path(capsys):
    """Python, both clocks and the CLI refuse an unknown name, listing the registered ones; none runs as another."""
    from core.cli.commands import main

    listed = ", ".join(REGISTRY)
    for call in (
        lambda: simulate(TOY_TRAFFIC, 2, "longest"),
        lambda: schedule(TOY_TRAFFIC, 2, "longest"),
        lambda: simulate_timed(TOY_TRAFFIC, 2, "longest", UnitCost()),
    ):
        with pytest.raises(ValueError, match=f"policy must be one of {listed}, got 'longest'"):
            call()
    for argv, words in (
        (["simulate", "--policy", "longest"], "invalid choice: 'longest' (choose from 'static', 'continuous'"),
        (["compare", "--policies", "static,longest"], f"'longest' is not a policy; registered: {listed}"),
    ):
        with pytest.raises(SystemExit) as exit_:
            main(argv)
        err = capsys.readouterr().err
        assert exit_.value.code == 2 and words in err and err.count("\n") == 1


def test_a_fast_loop_is_never_inherited():
    """A subclass that changes a rule runs in the engine, never in its parent's fast loop."""
    assert get_policy("continuous").fast_steps is not None and get_policy("static").fast_steps is not None
    for name in ("sjf", "priority", "chunked"):
        assert get_policy(name).fast_steps is None and get_policy(name).fast_timed is None
    assert LongestFirst().fast_steps is None


# Requests as (arrival, output tokens, prompt tokens, priority class).
traffic = st.lists(
    st.tuples(st.integers(0, 20), st.integers(1, 20), st.integers(0, 24), st.integers(0, 2)), min_size=1, max_size=25
).map(lambda rows: [Request(f"r{i}", a, o, p, c) for i, (a, o, p, c) in enumerate(rows)])


def _pool(reqs, allocation, extra, block_size):
    """A pool just big enough for the largest request plus `extra` blocks (None: unlimited)."""
    if extra is None:
        return MemoryConfig(block_size=block_size, allocation=allocation)
    return _pool_for(reqs, allocation, extra, block_size)


@settings(max_examples=300, deadline=None)
@given(
    traffic,
    st.integers(1, 5),
    st.sampled_from(POLICIES),
    st.sampled_from(["paged", "contiguous"]),
    st.one_of(st.none(), st.integers(0, 6)),
    st.sampled_from([1, 4, 16]),
    st.integers(0, 6),
)
def test_every_policy_equals_the_per_step_oracle(reqs, slots, policy, allocation, extra, block_size, budget_extra):
    """Every registered policy, allocation, block size, budget and pool: the oracle's cells, events and recomputes."""
    memory = _pool(reqs, allocation, extra, block_size)
    budget = slots + budget_extra if get_policy(policy).has_token_budget else None
    s = schedule(reqs, slots, policy, memory, token_budget=budget)
    strings, events, recomputed, peak = simulate_memory_per_step(reqs, slots, policy, memory, 0, budget)
    assert as_run(s).timeline_strings() == strings
    assert [(int(s.pass_start[e.step]), e.kind, e.request) for e in s.events] == events
    assert s.recomputed_tokens == recomputed
    assert s.memory_metrics()["peak_blocks"] == peak
    # The unit cost gives the step clock exactly, whatever the policy.
    t = schedule(reqs, slots, policy, memory, cost=UnitCost(), token_budget=budget)
    assert t.pass_end.tolist() == s.pass_end.tolist() and t.start_pass.tolist() == s.start_pass.tolist()


def _admissions_respect(run, key) -> None:
    """Assert that no request is admitted while a waiting one that had arrived comes before it by `key`."""
    stays = run.stays.tolist()
    covered = {}
    for i, _, lo, _, release in stays:
        covered.setdefault(i, []).append((lo, release))
    finish = run.finish.tolist()
    arrival = run.arrival.tolist()

    def waiting(j, t):
        return arrival[j] <= t < finish[j] and not any(lo <= t < hi for lo, hi in covered[j])

    for k, _, t, _, _ in stays:
        for j in range(len(run.requests)):
            if j != k and waiting(j, t):
                assert key(j) >= key(k), (run.requests[j], "waited while", run.requests[k], "was admitted at", t)


@settings(max_examples=150, deadline=None)
@given(traffic, st.integers(1, 4), st.sampled_from(["paged", "contiguous"]), st.one_of(st.none(), st.integers(0, 4)))
def test_sjf_and_priority_admit_in_their_order(reqs, slots, allocation, extra):
    """Sjf never admits a longer request before a shorter one waiting; priority never a lower class before a higher."""
    memory = _pool(reqs, allocation, extra, 4)
    order = sorted(range(len(reqs)), key=lambda i: (reqs[i].arrival, i))
    fcfs = {i: n for n, i in enumerate(order)}
    sjf = as_run(schedule(reqs, slots, "sjf", memory))
    _admissions_respect(sjf, lambda i: (reqs[i].output_tokens, fcfs[i]))
    prio = as_run(schedule(reqs, slots, "priority", memory))
    _admissions_respect(prio, lambda i: reqs[i].priority)


@settings(max_examples=150, deadline=None)
@given(traffic, st.integers(1, 5), st.sampled_from(["continuous", "sjf", "priority", "chunked"]), st.integers(0, 4))
def test_invariants_of_every_policy_under_a_tight_pool(reqs, slots, policy, extra):
    """Never over the pool; tokens conserved; no slot holds two; the policy's first is never preempted beside others.

    The running request the policy ranks first (lowest victim rank, then oldest admission) is never the victim while
    another runs, so every run drains.
    """
    memory = _pool(reqs, "paged", extra, 4)
    pol = get_policy(policy)
    s = schedule(reqs, slots, policy, memory, token_budget=slots + 3 if pol.has_token_budget else None)
    run = as_run(s)
    assert s.pass_blocks.max() <= memory.kv_blocks
    grid = run.timeline_strings()
    assert sum(row.count("G") + row.count("R") for row in grid) == sum(r.output_tokens for r in reqs)
    for slot in range(slots):
        spans = sorted((lo, hi) for _, sl, lo, _, hi in run.stays.tolist() if sl == slot)
        assert all(a[1] <= b[0] for a, b in zip(spans, spans[1:]))
    stays = run.stays.tolist()
    finish = run.finish.tolist()
    for step in sorted({int(s.pass_start[e.step]) for e in s.events if e.kind == "preempt"}):
        # Running at this boundary: stays begun before it that end at it by a preemption or run past it.
        running = {i: (lo, sl) for i, sl, lo, hi, _ in stays if lo < step and (hi > step or hi == step != finish[i])}
        for e in (e for e in s.events if e.kind == "preempt" and int(s.pass_start[e.step]) == step):
            first = min(running, key=lambda i: (pol.victim_rank(reqs[i]), running[i]))
            assert e.request != first or len(running) == 1
            running.pop(e.request)


def test_priority_preempts_the_lowest_class_first():
    """Two running, one block short: the class-1 request goes though it was admitted first (FCFS would take B)."""
    reqs = [Request("A", 0, 12, 4, 1), Request("B", 0, 12, 4, 0)]
    memory = MemoryConfig(kv_blocks=5, block_size=4)
    fcfs = schedule(reqs, 2, "continuous", memory)
    prio = schedule(reqs, 2, "priority", memory)
    assert [e.request for e in fcfs.events if e.kind == "preempt"][0] == 1  # the newest
    assert [e.request for e in prio.events if e.kind == "preempt"][0] == 0  # the lowest class


def test_the_generator_draws_two_classes_without_moving_the_traffic():
    """high_priority_share: about that share in class 0, the rest class 1; arrivals and lengths as without classes."""
    plain = generate(TrafficConfig(requests=400))
    classed = generate(TrafficConfig(requests=400, high_priority_share=0.25))
    assert [(r.arrival, r.output_tokens, r.prompt_tokens) for r in plain] == [
        (r.arrival, r.output_tokens, r.prompt_tokens) for r in classed
    ]
    assert {r.priority for r in plain} == {0} and {r.priority for r in classed} == {0, 1}
    assert 0.18 < np.mean([r.priority == 0 for r in classed]) < 0.32


def test_a_trace_may_carry_a_priority_column(tmp_path):
    """`priority` is optional (default 0), any integer in range; a bad one names the line and column."""
    from core import load_trace
    from core.workload.traces import TraceError

    good = tmp_path / "p.csv"
    good.write_text("arrival,output_tokens,priority\n0,4,1\n0,3,-2\n")
    assert [r.priority for r in load_trace(good)] == [1, -2]
    bad = tmp_path / "bad.csv"
    bad.write_text("arrival,output_tokens,priority\n0,4,high\n")
    with pytest.raises(TraceError, match=r"bad.csv:2:3: priority must be a whole number in -1,000,000..1,000,000"):
        load_trace(bad)


COMPARISON = re.compile(
    r"""(==|!=|===|!==)\s*["'](static|continuous|chunked|sjf|priority)["']"""
    r"""|["'](static|continuous|chunked|sjf|priority)["']\s*(==|!=|===|!==)"""
    r"""|\bin\s*[(\[]\s*["'](static|continuous|chunked|sjf|priority)["']"""
    r"""|["'](static|continuous|chunked|sjf)["']\s+(not\s+)?in\b"""  # ("priority" is also a trace column)
)


def test_nobody_outside_the_registry_compares_a_policy_name():
    """core, app, replay and the JS read traits: no `== "static"`-style comparison outside the policies themselves.

    The policies are core/sched/policies.py and the engines' presets in core/engines/ (vLLM's own setting is named
    `priority`, say); everything else reads traits.
    """
    found = []
    for folder, pattern in (("core", "*.py"), ("app", "*.py"), ("replay", "*.py"), ("app/web", "*.js")):
        for path in sorted((ROOT / folder).rglob(pattern)):
            if folder == "core" and (path.name == "policies.py" or path.parent.name == "engines"):
                continue
            for n, line in enumerate(path.read_text().splitlines(), 1):
                if COMPARISON.search(line):
                    found.append(f"{path.relative_to(ROOT)}:{n}: {line.strip()}")
    assert not found, "\n".join(found)


def test_compare_says_slower_when_slower_and_shows_each_class(tmp_path, capsys):
    """A ratio below 1 reads "slower", never "0.96x faster"; two priority classes get a latency row each."""
    from core.cli.commands import main
    from core.cli.report import how_much_sooner

    assert how_much_sooner(2.0) == "2.00x faster" and how_much_sooner(0.8) == "1.25x slower"
    assert how_much_sooner(1.0) == "as fast (1.00x)" and how_much_sooner(0.5, "sooner", "later") == "2.00x later"
    trace = tmp_path / "classes.csv"
    # One slot: A (class 1, 6 tokens) and B (class 0, 2 tokens) both wait at step 1 behind C.
    trace.write_text("arrival,output_tokens,priority\n1,6,1\n1,2,0\n0,1,1\n")
    assert main(["compare", "--trace", str(trace), "--slots", "1", "--policies", "continuous,priority"]) == 0
    out = capsys.readouterr().out
    # continuous: C 0-1, A 1-7, B 7-9 -> class 0 (B) 8.0, class 1 (A 6, C 1) 3.5; priority: B 1-3, A 3-9.
    assert "latency mean, class 0 (1)           8.0         2.0" in out
    assert "latency mean, class 1 (2)           3.5         4.5" in out
    assert "priority drains as fast (1.00x)" in out


@settings(max_examples=60, deadline=None)
@given(traffic, st.integers(1, 4), st.sampled_from(["sjf", "priority"]))
def test_ordered_policies_on_a_clock_admit_in_their_order_and_cost_each_pass(reqs, slots, policy):
    """On the roofline clock: each pass costs what the model says; nobody is admitted past an earlier-ranked arrival.

    Arrivals are in ms; a request that had arrived by a pass's start and comes first in the order never waits while
    another is admitted at that pass.
    """
    from dataclasses import replace as with_

    from core.clock.hardware import cost_model

    cost = cost_model()
    in_ms = [with_(r, arrival=r.arrival * 7) for r in reqs]
    run = simulate_timed(in_ms, slots, policy, cost)
    assert np.allclose(run.pass_ms, cost.pass_ms(run.pass_rows, run.pass_prefill, run.pass_context))
    assert int((run.finish_pass - run.start_pass).sum()) == sum(r.output_tokens for r in reqs)
    order = sorted(range(len(reqs)), key=lambda i: (reqs[i].arrival, i))
    fcfs = {i: n for n, i in enumerate(order)}
    key = (lambda i: (reqs[i].output_tokens, fcfs[i])) if policy == "sjf" else (lambda i: (reqs[i].priority, fcfs[i]))
    start, arrival = run.start_pass.tolist(), run.arrival_ms.tolist()
    for k, p in enumerate(start):
        for j, q in enumerate(start):
            if q > p and arrival[j] <= run.pass_start_ms[p]:
                assert key(j) > key(k), (reqs[j], "waited while", reqs[k], "was admitted at pass", p)


@settings(max_examples=150, deadline=None)
@given(traffic, st.integers(1, 5), st.integers(0, 6), st.sampled_from([1, 4, 16]))
def test_guaranteed_no_evict_never_preempts(reqs, slots, extra, block_size):
    """TensorRT-LLM's GUARANTEED_NO_EVICT on any pool that fits the largest reservation: not one preemption."""
    from core.sched.fits import smallest_pool

    least = smallest_pool(reqs, MemoryConfig(block_size=block_size), "trtllm-no-evict")
    s = schedule(reqs, slots, "trtllm-no-evict", MemoryConfig(kv_blocks=least + extra, block_size=block_size))
    assert s.preemptions == 0 and s.pass_blocks.max() <= least + extra


def test_no_evict_runs_fewer_at_once_and_max_util_recomputes(capsys):
    """Four requests (4-token prompts, 8-token answers) on 6 blocks of 4.

    No-evict reserves 3 blocks each, so two run at once and none is evicted; max-util admits by current need
    (2 blocks), runs three, and must pause one. On the CLI, compare's traffic on a pool that fits: no-evict pauses none.
    """
    from core.cli.commands import main

    reqs = [Request(k, 0, 8, 4) for k in "ABCD"]
    memory = MemoryConfig(kv_blocks=6, block_size=4)
    rows = {}
    for policy in ("trtllm-no-evict", "trtllm-max-util"):
        s = schedule(reqs, 4, policy, memory)
        rows[policy] = (int(s.pass_rows.max() if s.passes else 0), s.preemptions)
    assert rows["trtllm-no-evict"][0] < rows["trtllm-max-util"][0]
    assert rows["trtllm-no-evict"][1] == 0 < rows["trtllm-max-util"][1]
    argv = ["compare", "--requests", "40", "--slots", "8", "--kv-blocks", "120"]
    assert main([*argv, "--policies", "trtllm-no-evict,trtllm-max-util", "--json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert doc["trtllm-no-evict"]["preemptions"] == 0


@settings(max_examples=120, deadline=None)
@given(
    traffic,
    st.integers(1, 4),
    st.sampled_from(["fcfs", "priority"]),
    st.integers(0, 12),
    st.one_of(st.none(), st.integers(0, 4)),
    st.integers(0, 20),
)
def test_vllm_with_its_settings_equals_the_oracle(reqs, slots, order, threshold, extra, budget_extra):
    """VLLM's preset with any scheduling_policy and long_prefill_token_threshold: the oracle's cells and events.

    And no pass holds more than the budget (max_num_batched_tokens).
    """
    from core.engines.vllm import VLLM

    pol = VLLM(order, threshold)
    memory = _pool(reqs, "paged", extra, 4)
    budget = slots + budget_extra
    s = schedule(reqs, slots, pol, memory, token_budget=budget)
    strings, events, recomputed, _ = simulate_memory_per_step(reqs, slots, pol, memory, 0, budget)
    assert as_run(s).timeline_strings() == strings and s.recomputed_tokens == recomputed
    assert [(int(s.pass_start[e.step]), e.kind, e.request) for e in s.events] == events
    assert ((s.pass_rows + s.pass_prefill) <= budget).all()


def test_the_long_prefill_threshold_caps_one_prompt_per_pass(capsys):
    """A 100-token prompt under a 64-token budget: two passes without a threshold, seven of at most 16 with one."""
    from core.cli.commands import main
    from core.engines.vllm import VLLM

    reqs = [Request("A", 0, 3, 100)]
    plain = schedule(reqs, 1, "vllm", token_budget=64)
    capped = schedule(reqs, 1, VLLM(long_prefill_token_threshold=16), token_budget=64)
    assert plain.first_pass.tolist() == [1] and capped.first_pass.tolist() == [6]
    assert capped.pass_prefill[:7].tolist() == [16, 16, 16, 16, 16, 16, 4]
    assert main(["simulate", "--policy", "chunked", "--token-budget", "64", "--scheduling-policy", "priority"]) == 2
    assert "--scheduling-policy applies to a policy with that setting (vllm) only" in capsys.readouterr().err


@settings(max_examples=60, deadline=None)
@given(st.lists(st.integers(0, 5), max_size=30), st.lists(st.booleans(), max_size=60), st.booleans())
def test_a_keyed_queue_answers_as_a_sorted_list_would(keys, ops, insertion):
    """Arrivals, rejoins and pops in any order: the head, the length, truth and the order shown are the sorted ones.

    Ties go by request number (KeyedQueue) or by insertion (SGLang's InsertionQueue, a stable sort).
    """
    from core.engines.sglang import InsertionQueue
    from core.sched.policies import KeyedQueue

    queue = (InsertionQueue if insertion else KeyedQueue)(keys)
    model, inserted, arrivals = [], 0, iter(range(len(keys)))
    for push in ops:
        k = next(arrivals, None) if push else None
        if k is not None:
            (queue.appendleft if k % 2 else queue.append)(k)  # a rejoin goes by its key, like an arrival
            model.append((keys[k], inserted if insertion else k, k))
            inserted += 1
        elif model:
            model.sort()
            assert queue[0] == model[0][2]
            assert queue.popleft() == model.pop(0)[2]
        model.sort()
        assert len(queue) == len(model) and bool(queue) == bool(model)
        assert list(queue) == [k for *_, k in model]
