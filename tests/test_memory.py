"""Memory decides who runs: the engine against the per-step oracle and today's schedules; invariants; refusals."""

import dataclasses

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from core.chapter.memory_example import SLOTS, memory_requests, memory_runs
from core.clock.hardware import cost_model
from core.kv.memory import KVPool, MemoryConfig, longest_free_run, pool_for
from core.limits import LimitError
from core.sched.engine import as_run, schedule
from core.sched.fits import check_fits
from core.sched.policies import REGISTRY, get_policy
from core.sched.schedule import simulate
from core.sched.timed import simulate_timed
from core.workload.request import Request
from tests.oracles.memory_loop import simulate_memory_per_step

from .helpers import make_requests

# Prompts matter to memory: requests as (arrival, output tokens, prompt tokens).
memory_traffic = st.lists(
    st.tuples(st.integers(0, 20), st.integers(1, 20), st.integers(0, 24)), min_size=1, max_size=25
).map(lambda rows: [Request(f"r{i}", a, o, p) for i, (a, o, p) in enumerate(rows)])


def _pool_for(reqs, memory_kind, extra, block_size):
    """A pool just big enough for the largest request, plus `extra` blocks: tight enough to preempt and block."""
    longest = max(r.output_tokens for r in reqs)
    # A reservation holds the request's own max_tokens where it has one, else the longest answer.
    need = max(-(-(max(1, r.prompt_tokens) + max(longest, r.max_tokens)) // block_size) for r in reqs)
    return MemoryConfig(kv_blocks=need + extra, block_size=block_size, allocation=memory_kind)


@settings(max_examples=200, deadline=None)
@given(
    memory_traffic,
    st.integers(1, 5),
    st.sampled_from(["continuous", "static", "chunked"]),
    st.sampled_from(["paged", "contiguous"]),
    st.integers(0, 6),
    st.sampled_from([1, 4, 16]),
    st.integers(0, 6),
)
def test_the_engine_equals_the_per_step_oracle(reqs, slots, policy, allocation, extra, block_size, budget_extra):
    """Every policy and allocation, a tight pool: the same cells, events, recomputed tokens and peak as the oracle."""
    memory = _pool_for(reqs, allocation, extra, block_size)
    budget = slots + budget_extra if policy == "chunked" else None
    s = schedule(reqs, slots, policy, memory, token_budget=budget)
    run = as_run(s)
    strings, events, recomputed, peak = simulate_memory_per_step(reqs, slots, policy, memory, 0, budget)
    assert run.timeline_strings() == strings
    assert [(int(s.pass_start[e.step]), e.kind, e.request) for e in s.events] == events
    assert s.recomputed_tokens == recomputed
    assert s.memory_metrics()["peak_blocks"] == peak


@settings(max_examples=150, deadline=None)
@given(memory_traffic, st.integers(1, 6), st.sampled_from(["continuous", "static"]), st.integers(0, 8))
def test_unlimited_memory_gives_todays_schedules_on_both_clocks(reqs, slots, policy, timeout):
    """Unlimited memory: the engine's step and timed schedules equal the fast paths', bit for bit."""
    timeout = timeout if policy == "static" else 0
    fast, engine = simulate(reqs, slots, policy, timeout), as_run(schedule(reqs, slots, policy, batch_timeout=timeout))
    for field in ("start", "finish", "slot", "release"):
        assert getattr(fast, field).tolist() == getattr(engine, field).tolist(), field
    cost = cost_model()
    in_ms = [dataclasses.replace(r, arrival=r.arrival * 7) for r in reqs]
    fast_t = simulate_timed(in_ms, slots, policy, cost, timeout * 7.0)
    eng_t = schedule(in_ms, slots, policy, cost=cost, batch_timeout=timeout * 7.0)
    assert fast_t.pass_end_ms.tobytes() == eng_t.pass_end.tobytes()
    assert fast_t.pass_start_ms.tobytes() == eng_t.pass_start.tobytes()
    assert fast_t.pass_context.tolist() == eng_t.pass_context.tolist()
    assert fast_t.start_pass.tolist() == eng_t.start_pass.tolist()
    assert fast_t.finish_pass.tolist() == eng_t.finish_pass.tolist()


@settings(max_examples=150, deadline=None)
@given(memory_traffic, st.integers(1, 5), st.sampled_from(["paged", "contiguous"]), st.integers(0, 4))
def test_invariants_under_a_tight_pool(reqs, slots, allocation, extra):
    """Never over the pool; tokens conserved across preemptions; recomputed tokens never counted as useful; FCFS."""
    memory = _pool_for(reqs, allocation, extra, 4)
    s = schedule(reqs, slots, "continuous", memory)
    run = as_run(s)
    assert s.pass_blocks.max() <= memory.kv_blocks
    grid = run.timeline_strings()
    emitted = sum(row.count("G") + row.count("R") for row in grid)
    assert emitted == sum(r.output_tokens for r in reqs)  # each token once, however often its KV was recomputed
    # Recomputed tokens are what preempted requests had generated: the events' sum, and never more than that.
    assert s.recomputed_tokens == sum(e.tokens for e in s.events if e.kind == "preempt")
    from core.measure.metrics import compute_metrics

    assert compute_metrics(run).useful_tokens == sum(r.output_tokens for r in reqs)
    # First come, first served: nobody's first admission precedes an earlier arrival's.
    order = sorted(range(len(reqs)), key=lambda i: (reqs[i].arrival, i))
    firsts = [int(s.start_pass[i]) for i in order]
    assert firsts == sorted(firsts)
    # No slot holds two requests in one step: every cell of the grid belongs to one interval.
    cells = run.cells if run.cells is not None else None
    if cells is not None:
        for slot in range(slots):
            spans = sorted((lo, hi) for _, sl, lo, hi, _ in cells.tolist() if sl == slot)
            assert all(a[1] <= b[0] for a, b in zip(spans, spans[1:]))


def test_the_block_manager_decides_nothing_and_owns_each_block_once():
    """Contiguous first fit leaves a hole a larger request cannot use; paged takes blocks from anywhere."""
    pool = KVPool(MemoryConfig(kv_blocks=10, block_size=4, allocation="contiguous"))
    pool.allocate(0, 12)  # blocks 0-2
    pool.allocate(1, 8)  # 3-4
    pool.allocate(2, 20)  # 5-9
    pool.release(1)  # a hole of 2 at 3-4
    assert pool.free == 2 and pool.largest_free_run() == 2
    assert not pool.can_allocate(3, 12) and pool.can_allocate(3, 8)
    pool.release(0)  # merges with the hole: 0-4 free
    assert pool.largest_free_run() == 5 and pool.can_allocate(3, 20)
    owners = pool.owners()
    assert owners == [-1] * 5 + [2] * 5
    paged = KVPool(MemoryConfig(kv_blocks=3, block_size=4))
    paged.allocate(0, 5)
    assert paged.held[0] == 2 and paged.can_append(0, 8) and not paged.can_append(0, 13)
    with pytest.raises(RuntimeError):
        paged.allocate(0, 1)  # it already holds blocks


def test_the_worked_memory_example_paged_contiguous_static():
    """Eight requests, 4 slots, 12 blocks of 4 tokens (core/chapter/memory_example.py works the figures by hand).

    Paged: A and B (8-token prompts) start with 3 blocks, C and D (2 tokens) with 1: 8 blocks, all four run, and
    the schedule is unlimited memory's. Contiguous: A and B reserve 5 blocks each (8 + 10 tokens), so C (3 blocks)
    waits with 2 free: two rows. Static: rows reserve the widest prompt plus 10 tokens, 5 blocks: two rows.
    """
    runs = memory_runs()
    assert {m: int(s.pass_rows[1]) for m, s in runs.items()} == {"paged": 4, "contiguous": 2, "static": 2}
    assert {m: as_run(s).drain for m, s in runs.items()} == {"paged": 13, "contiguous": 20, "static": 24}
    unlimited = simulate(memory_requests(), SLOTS, "continuous")
    assert as_run(runs["paged"]).timeline_strings() == unlimited.timeline_strings()  # paged: no memory cost at all
    blocked = [e for e in runs["contiguous"].events if e.kind == "blocked"]
    assert (blocked[0].step, blocked[0].request, blocked[0].tokens, blocked[0].free) == (0, 2, 3, 2)
    assert runs["contiguous"].pass_blocks[0] == 10 and runs["paged"].pass_blocks[0] == 8


def test_preemption_frees_the_newest_and_recomputes_its_tokens():
    """Two long requests in a pool that holds one and a half: the newer is thrown out and recomputed."""
    reqs = [Request("A", 0, 10, 4), Request("B", 0, 10, 4)]
    s = schedule(reqs, 2, "continuous", MemoryConfig(kv_blocks=6, block_size=4))
    preempts = [e for e in s.events if e.kind == "preempt"]
    assert preempts and preempts[0].request == 1  # B, the most recently admitted
    grid = as_run(s).timeline_strings()
    assert "R" in grid[0] + grid[1]
    assert s.recomputed_tokens == preempts[0].tokens > 0


def test_chunked_prefill_splits_a_huge_prompt():
    """A 40-token prompt under a budget of 12 with one decoder beside it: 4 chunk passes, the last yields a token."""
    reqs = [Request("A", 0, 20, 1), Request("B", 1, 3, 40)]
    s = schedule(reqs, 2, "chunked", token_budget=12)
    row = as_run(s).timeline_strings()[1]
    assert row.startswith(".FFF") and row[4] == "G"  # 11 + 11 + 11 tokens, then 7 and the first token
    assert s.pass_prefill[1:5].tolist() == [11, 11, 11, 7]


def test_refusals_name_the_request_and_both_sizes():
    """A pool smaller than one request, a budget below the slots, a reservation smaller than an output."""
    reqs = make_requests((0, 30))
    with pytest.raises(LimitError, match="needs 2 blocks .* the pool has 1"):
        check_fits(reqs, MemoryConfig(kv_blocks=1, block_size=16))
    with pytest.raises(ValueError, match="token_budget"):
        schedule(reqs, 4, "chunked", token_budget=0)
    with pytest.raises(LimitError, match="reserve_tokens 5 is below the longest output"):
        schedule(reqs, 4, "continuous", MemoryConfig(kv_blocks=99, allocation="contiguous", reserve_tokens=5))
    with pytest.raises(ValueError, match="policy must be one of static, continuous, chunked, sjf, priority, vllm"):
        get_policy("fifo")
    assert {"static", "continuous", "chunked", "sjf", "priority", "trtllm-no-evict", "trtllm-max-util"} <= set(REGISTRY)


def test_an_h100_with_llama2_7b_leaves_a_countable_pool():
    """80 GB less 13.5 GB of weights at 0.5 MB per token: 136,192 tokens, 8,512 blocks of 16."""
    assert pool_for(80, 13.5, 0.5) == int((80 - 13.5) * 1024 / 0.5) // 16 == 8512


def test_kv_use_and_fragmentation_are_measured():
    """Contiguous reservations hold blocks no token fills: its KV use is below its reservations; paged is not."""
    runs = memory_runs()
    contiguous, paged = runs["contiguous"], runs["paged"]
    reserved = float(contiguous.pass_blocks.sum() / (12 * contiguous.passes))  # unit passes, no idle gap
    m = contiguous.memory_metrics()
    assert 0 < m["kv_utilisation"] < reserved
    assert 0 <= m["fragmentation"] <= 1
    assert np.all(contiguous.pass_token_blocks <= contiguous.pass_blocks)
    assert np.array_equal(paged.pass_token_blocks, paged.pass_blocks)  # paged holds only blocks with tokens


def test_a_named_accelerator_and_model_give_a_pool():
    """H100 80 GB less Llama-2 7B's 13.48e9 bytes of bf16 weights (12.55 GiB): 138,129 tokens, 8,633 blocks."""
    from core.clock.hardware import kv_pool_blocks

    assert kv_pool_blocks("h100-sxm", "llama2-7b") == 8633
    assert kv_pool_blocks("h200", "llama3-8b") > kv_pool_blocks("h100-sxm", "llama3-8b") > 3 * 8633  # GQA: 1/4 the KV


@pytest.mark.parametrize(
    "argv, message",
    [
        (["simulate", "--block-size", "4"], "--block-size applies to a limited pool: give --kv-blocks N too"),
        (["simulate", "--kv-blocks", "1"], "needs 7 blocks of 16 tokens for its prompt and output"),
        (["simulate", "--policy", "chunked"], "--policy chunked needs --token-budget T"),
        (["simulate", "--policy", "chunked", "--token-budget", "2"], "--token-budget 2 is below --slots 4"),
        (
            ["simulate", "--token-budget", "9"],
            "--token-budget applies to a policy with a token budget (chunked, vllm, sglang",
        ),
        (["simulate", "--kv-blocks", "9", "--reserve-tokens", "5"], "--reserve-tokens applies to --allocation"),
        (
            ["simulate", "--kv-blocks", "99", "--allocation", "contiguous", "--reserve-tokens", "5"],
            "reserve_tokens 5 is below the longest output in the traffic (40 tokens)",
        ),
        (["simulate", "--kv-preset", "h100-sxm:llama2-7b", "--kv-blocks", "3"], "give --kv-blocks or --kv-preset"),
    ],
)
def test_memory_flags_refused_with_one_line(argv, message, capsys):
    """Each bad memory flag: exit 2, one line naming it and what is allowed."""
    from core.cli.commands import main

    assert main(argv) == 2
    err = capsys.readouterr().err.strip()
    assert message in err and "\n" not in err


def test_simulate_json_reports_what_memory_decided(capsys):
    """--json adds the memory metrics, the pool, the blocks per step and the events; the kv column fits the pool."""
    import json

    from core.cli.commands import main

    assert main(["simulate", "--kv-blocks", "40", "--block-size", "4", "--json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    m = doc["metrics"]
    assert m["preemptions"] == sum(1 for e in doc["memory_events"] if e["kind"] == "preempt") > 0
    assert m["recomputed_tokens"] == sum(e["tokens"] for e in doc["memory_events"] if e["kind"] == "preempt")
    assert max(doc["kv"]) == m["peak_blocks"] <= 40 and len(doc["kv"]) == m["window"]
    assert doc["memory"] == {
        "kv_blocks": 40,
        "block_size": 4,
        "allocation": "paged",
        "reserve_tokens": None,
        "token_budget": None,
    }
    assert "R" in "".join(doc["timeline"])
    assert main(["simulate", "--json"]) == 0
    assert "memory" not in json.loads(capsys.readouterr().out)  # unlimited: today's contract, unchanged


@settings(max_examples=100, deadline=None)
@given(memory_traffic, st.integers(1, 5), st.sampled_from(["paged", "contiguous"]), st.integers(0, 4))
def test_no_block_is_owned_twice_and_the_map_matches_the_counts(reqs, slots, allocation, extra):
    """At every pass the recorded pool map holds each running request's blocks once, and as many as counted.

    Its longest free run (paged: all its free blocks) is the one the pass records, with or without the map
    recorded (a paged pool's is left to the assembly, a contiguous pool's is asked of the pool).
    """
    memory = _pool_for(reqs, allocation, extra, 4)
    s = schedule(reqs, slots, "continuous", memory, record_pool=True)
    unrecorded = schedule(reqs, slots, "continuous", memory)
    assert np.array_equal(unrecorded.pass_largest_free, s.pass_largest_free)
    assert np.array_equal(unrecorded.pass_blocks, s.pass_blocks)
    assert len(s.pool_maps) == s.passes
    for p, owners in enumerate(s.pool_maps):
        assert len(owners) == memory.kv_blocks
        assert sum(1 for o in owners if o >= 0) == s.pass_blocks[p]
        free_run = longest_free_run(owners) if allocation == "contiguous" else memory.kv_blocks - s.pass_blocks[p]
        assert s.pass_largest_free[p] == free_run  # paged: any free blocks serve a request, in any order
        if allocation == "contiguous":  # each owner's blocks are one run
            for o in set(owners) - {-1}:
                where = [b for b, x in enumerate(owners) if x == o]
                assert where == list(range(where[0], where[-1] + 1))


def test_a_preset_sizes_the_pool_from_the_accelerator_and_model(capsys):
    """--kv-preset h100-sxm:llama2-7b: the JSON's pool is kv_pool_blocks's 8,633 blocks of 16."""
    import json

    from core.cli.commands import main

    assert main(["simulate", "--kv-preset", "h100-sxm:llama2-7b", "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["memory"]["kv_blocks"] == 8633


def test_compare_takes_a_budget_only_for_a_budget_policy(capsys):
    """`compare --token-budget` is refused unless a compared policy has a budget, naming the ones that do."""
    from core.cli.commands import main

    assert main(["compare", "--token-budget", "9"]) == 2
    assert "applies to a policy with a token budget (chunked, vllm, sglang)" in capsys.readouterr().err
    assert main(["compare", "--policies", "continuous,chunked", "--token-budget", "64", "--requests", "20"]) == 0
    assert "chunked drains" in capsys.readouterr().out


def test_the_worked_examples_fixture_is_its_requests():
    """tests/fixtures/memory.csv (docs/memory.md's command) holds exactly the worked example's requests."""
    from pathlib import Path

    from core import load_trace

    fixture = Path(__file__).parent / "fixtures" / "memory.csv"
    assert list(load_trace(fixture)) == memory_requests()


def _memory_waits_reference(s):
    """memory_waits written plainly: every step of every wait scanned, the grid and the pool map read cell by cell."""
    from core.sched.waits import Wait

    run = as_run(s)
    grid = run.grid(run.drain)
    at = {int(start): p for p, start in enumerate(s.pass_start.tolist())}
    n = len(s.requests)

    def pool_at(t):
        owners = s.pool_maps[at[t]]
        runs = "".join("." if o < 0 else "x" for o in owners).split("x")
        return sum(1 for o in owners if o < 0), max(len(r) for r in runs)

    out = []
    if s.policy == "static":
        for t0 in sorted(set(run.start.tolist())):
            members = [i for i in range(n) if run.start[i] == t0]
            waiting = [i for i in range(n) if run.arrival[i] <= t0 < run.start[i]]
            if len(members) == s.slots or not waiting:
                continue
            widest = max(max(1, s.requests[i].prompt_tokens) for i in members + waiting[:1])
            row = s.memory.blocks_for(widest + (s.memory.reserve_tokens or max(r.output_tokens for r in s.requests)))
            for t in range(t0, max(int(run.release[i]) for i in members)):
                for slot in range(len(members), s.slots):
                    out.append(Wait(t, slot, waiting[0], row, *pool_at(t)))
        return out
    cells = run.cells.tolist() if run.cells is not None else []
    for e in sorted((int(s.pass_start[e.step]), e.request, e.tokens) for e in s.events if e.kind == "blocked"):
        t0, request, needed = e
        t1 = min((lo for i, _, lo, _, _ in cells if i == request and lo >= t0), default=run.drain)
        for t in range(t0, t1):
            idle = [slot for slot in range(s.slots) if grid[slot, t] == 0]
            if idle and t in at:
                out.append(Wait(t, idle[0], request, needed, *pool_at(t)))
    latest = {w.step: w for w in out}  # a later head at the same step replaces an earlier one
    return [latest[t] for t in sorted(latest)]


@settings(max_examples=150, deadline=None)
@given(
    memory_traffic,
    st.integers(1, 5),
    st.sampled_from(["continuous", "static", "chunked"]),
    st.sampled_from(["paged", "contiguous"]),
    st.integers(0, 6),
    st.sampled_from([1, 4, 16]),
)
def test_memory_waits_equal_a_plain_scan(reqs, slots, policy, allocation, extra, block_size):
    """memory_waits (one sweep over the cells, each pool map read once) equals the step-by-step scan."""
    memory = _pool_for(reqs, allocation, extra, block_size)
    budget = slots + 2 if policy == "chunked" else None
    s = schedule(reqs, slots, policy, memory, token_budget=budget, record_pool=True)
    from core.sched.engine import memory_waits

    assert memory_waits(s) == _memory_waits_reference(s)


@settings(max_examples=200, deadline=None)
@given(st.lists(st.integers(-1, 3), max_size=40))
def test_longest_free_run_is_the_longest_stretch_of_free_blocks(owners):
    """The longest run of -1s in a block map, as splitting its picture at held blocks measures it."""
    from core.kv.memory import longest_free_run

    runs = "".join("." if o < 0 else "x" for o in owners).split("x")
    assert longest_free_run(owners) == max(len(r) for r in runs)
    assert longest_free_run(tuple(owners)) == longest_free_run(owners)


@settings(max_examples=100, deadline=None)
@given(memory_traffic, st.integers(1, 5), st.sampled_from(["continuous", "chunked"]), st.integers(0, 6))
def test_recording_the_pool_changes_no_decision(reqs, slots, policy, extra):
    """Block ids are kept only with record_pool; with or without them the schedule is the same, field for field."""
    memory = _pool_for(reqs, "paged", extra, 4)
    budget = slots + 2 if policy == "chunked" else None
    plain = schedule(reqs, slots, policy, memory, token_budget=budget)
    recorded = schedule(reqs, slots, policy, memory, token_budget=budget, record_pool=True)
    for f in dataclasses.fields(plain):
        if f.name != "pool_maps":
            a, b = getattr(plain, f.name), getattr(recorded, f.name)
            assert (a.tobytes() == b.tobytes()) if isinstance(a, np.ndarray) else a == b, f.name


@settings(max_examples=100, deadline=None)
@given(
    memory_traffic,
    st.integers(1, 5),
    st.sampled_from(["continuous", "chunked"]),
    st.sampled_from(["paged", "contiguous"]),
    st.sampled_from([1, 4, 16]),
)
def test_an_unlimited_pool_counts_what_each_admission_was_given(reqs, slots, policy, allocation, block_size):
    """Unlimited: at each pass the pool holds, per running request, its prompt plus one token (or its reservation)."""
    memory = MemoryConfig(block_size=block_size, allocation=allocation)
    s = schedule(reqs, slots, policy, memory, token_budget=slots + 3 if policy == "chunked" else None)
    reserve = max(r.output_tokens for r in reqs) if allocation == "contiguous" else 1
    held = [memory.blocks_for(max(1, r.prompt_tokens) + reserve) for r in reqs]
    for p in range(s.passes):
        running = [i for i in range(len(reqs)) if s.start_pass[i] <= p < s.finish_pass[i]]
        assert s.pass_blocks[p] == sum(held[i] for i in running)


@settings(max_examples=150, deadline=None)
@given(
    memory_traffic,
    st.integers(1, 5),
    st.sampled_from(["continuous", "static", "chunked", "sjf", "priority"]),
    st.sampled_from(["paged", "contiguous"]),
    st.integers(0, 4),
    st.sampled_from([1, 2, 4, 16]),
)
def test_token_blocks_are_each_cells_tokens_pass_by_pass(reqs, slots, policy, allocation, extra, block_size):
    """The blocks that hold tokens, summed cell by cell and pass by pass: prompt, tokens so far, plus one."""
    memory = _pool_for(reqs, allocation, extra, block_size)
    s = schedule(reqs, slots, policy, memory, token_budget=slots + 1 if policy == "chunked" else None)
    from core.states import GENERATING, PADDING, RECOMPUTE

    expected = [0] * s.passes
    cells = s.cells.tolist()
    for request, _, lo, hi, state in cells:
        if state == PADDING:  # a finished row holds no new tokens
            continue
        emitting = [c for c in cells if c[0] == request and c[3] <= lo and c[4] in (GENERATING, RECOMPUTE)]
        emitted = sum(c[3] - c[2] for c in emitting)  # tokens out before this cell: one per G or R pass
        for q in range(lo, hi):
            expected[q] += memory.blocks_for(max(1, reqs[request].prompt_tokens) + emitted + (q - lo) + 1)
    assert s.pass_token_blocks.tolist() == expected
    if policy in ("continuous", "sjf", "priority") and allocation == "paged":
        assert s.pass_blocks.tolist() == s.pass_token_blocks.tolist()  # paged holds exactly the blocks with tokens


def test_growing_many_requests_at_once_is_growing_each_in_turn():
    """grow() gives each request one block, lowest ids first in the order given; it refuses more than are free."""
    memory = MemoryConfig(kv_blocks=8, block_size=4)
    one_by_one, at_once, counting = KVPool(memory), KVPool(memory), KVPool(memory, track_blocks=False)
    for pool in (one_by_one, at_once, counting):
        pool.allocate(0, 4)
        pool.allocate(1, 8)
    one_by_one.append(1, 9)
    one_by_one.append(0, 5)
    assert at_once.can_grow(2) and not at_once.can_grow(6)
    at_once.grow([1, 0])
    counting.grow([1, 0])
    assert at_once.owners() == one_by_one.owners() == [0, 1, 1, 1, 0, -1, -1, -1]
    assert at_once.held == one_by_one.held == counting.held == {0: 2, 1: 3} and counting.used == 5
    with pytest.raises(RuntimeError):
        counting.grow([0, 1, 0, 1])  # four blocks asked, three free
    with pytest.raises(ValueError, match="counts blocks only"):
        counting.owners()
