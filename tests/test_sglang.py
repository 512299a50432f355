"""SGLang's preset: prefill first, in chunks, with the running batch paused; fcfs or lof by max_new_tokens.

Its rules one by one, from SGLang's code, are tests/test_conformance_sglang.py's.
"""

import json

from hypothesis import given, settings
from hypothesis import strategies as st

from core import Request
from core.cli.commands import main
from core.engines.sglang import SGLang
from core.kv.memory import MemoryConfig
from core.sched.engine import as_run, schedule
from core.workload.traces import parse_trace
from tests.oracles.memory_loop import simulate_memory_per_step

from .test_policies import _pool

# Requests as (arrival, output tokens, prompt tokens, max_tokens above the output or None).
capped_traffic = st.lists(
    st.tuples(st.integers(0, 20), st.integers(1, 20), st.integers(0, 24), st.one_of(st.none(), st.integers(0, 30))),
    min_size=1,
    max_size=25,
).map(lambda rows: [Request(f"r{i}", a, o, p, 0, 0 if x is None else o + x) for i, (a, o, p, x) in enumerate(rows)])


def test_a_prompt_pass_pauses_the_running_request_until_its_last_chunk():
    """A decodes; B's 20-token prompt arrives: SGLang prefills it in three passes (8, 8, 4) while A waits (Z).

    vLLM decodes A in the same passes as B's chunks.
    """
    reqs = [Request("A", 0, 12, 2), Request("B", 2, 4, 20)]
    sglang = schedule(reqs, 2, "sglang", token_budget=8)
    assert as_run(sglang).timeline_strings() == ["GGZZZGGGGGGGGGG", "..FFGGGG......."]
    assert sglang.pass_prefill[2:5].tolist() == [8, 8, 4] and sglang.pass_rows[2:5].tolist() == [0, 0, 0]
    vllm = schedule(reqs, 2, "vllm", token_budget=8)
    assert as_run(vllm).timeline_strings()[0] == "G" * 12


def test_lof_admits_the_largest_max_tokens_first():
    """One slot busy; three wait with caps 10, 50 and 30: lof admits 50, 30, 10; fcfs arrival order.

    Without caps, lof orders by what the context leaves each (max_req_len - prompt - 1): equal prompts, equal keys,
    arrival order; a shorter prompt first.
    """
    reqs = [Request("A", 0, 5, 1), Request("B", 1, 3, 1, 0, 10), Request("C", 2, 3, 1, 0, 50)]
    reqs.append(Request("D", 3, 3, 1, 0, 30))
    lof = schedule(reqs, 1, SGLang("lof"), token_budget=4)
    assert lof.start_pass.tolist() == [0, 11, 5, 8]
    fcfs = schedule(reqs, 1, "sglang", token_budget=4)
    assert fcfs.start_pass.tolist() == [0, 5, 8, 11]
    uncapped = [Request(r.id, r.arrival, r.output_tokens, r.prompt_tokens) for r in reqs]
    assert schedule(uncapped, 1, SGLang("lof"), token_budget=4).start_pass.tolist() == [0, 5, 8, 11]
    longer = [uncapped[0], Request("B", 1, 3, 3), uncapped[2], uncapped[3]]  # B's longer prompt leaves it less
    assert schedule(longer, 1, SGLang("lof"), token_budget=4).start_pass.tolist() == [0, 11, 5, 8]


def equals_the_oracle(reqs, slots, pol, memory, budget):
    """Return the engine's schedule, asserting its cells, events, recomputes and peak are the per-step oracle's."""
    s = schedule(reqs, slots, pol, memory, token_budget=budget)
    strings, events, recomputed, peak = simulate_memory_per_step(reqs, slots, pol, memory, 0, budget)
    assert as_run(s).timeline_strings() == strings
    assert [(int(s.pass_start[e.step]), e.kind, e.request) for e in s.events] == events
    assert s.recomputed_tokens == recomputed and s.memory_metrics()["peak_blocks"] == peak
    return s


@settings(max_examples=200, deadline=None)
@given(
    capped_traffic,
    st.integers(1, 5),
    st.sampled_from(["fcfs", "lof"]),
    st.sampled_from(["paged", "contiguous"]),
    st.one_of(st.none(), st.integers(0, 6)),
    st.sampled_from([1, 4, 16]),
    st.integers(0, 20),
)
def test_sglang_with_its_settings_equals_the_oracle(reqs, slots, order, allocation, extra, block_size, budget_extra):
    """Any order, pool, block size and chunk size: the oracle's cells, events and recomputes.

    No pass holds both prompt tokens and decoding rows, and none more prompt tokens than chunked_prefill_size.
    """
    pol = SGLang(order)
    memory = _pool(reqs, allocation, extra, block_size)
    budget = slots + budget_extra
    s = equals_the_oracle(reqs, slots, pol, memory, budget)
    assert not ((s.pass_rows > 0) & (s.pass_prefill > 0)).any()
    assert (s.pass_prefill <= budget).all()


class _Eager(SGLang):
    """SGLang whose estimate counts none of the running requests' tokens to come (ratio 0): it retracts often."""

    def estimate(self, prompts, max_tokens, caps, pool_tokens):
        """Return SGLang's estimate with its ratio held at 0 (a test double)."""
        est = super().estimate(prompts, max_tokens, caps, pool_tokens)
        est.init = est.base = est.floor = est.decay = 0.0
        return est


# Requests as (arrival, output tokens, prompt tokens), each capped at its output: concurrent, over-committed.
tight_traffic = st.lists(
    st.tuples(st.integers(0, 10), st.integers(1, 20), st.integers(0, 8)), min_size=2, max_size=12
).map(lambda rows: [Request(f"r{i}", a, o, p, 0, o) for i, (a, o, p) in enumerate(rows)])


@settings(max_examples=150, deadline=None)
@given(
    tight_traffic,
    st.integers(2, 6),
    st.sampled_from(["fcfs", "lof"]),
    st.integers(0, 4),
    st.sampled_from([1, 2, 4]),
    st.integers(0, 20),
)
def test_retraction_equals_the_oracle(reqs, slots, order, extra, block_size, budget_extra):
    """Where the estimate admits freely, a retraction is frequent (about a quarter of these): the oracle's, exactly."""
    pol = _Eager(order)
    memory = _pool(reqs, "paged", extra, block_size)
    budget = slots + budget_extra
    equals_the_oracle(reqs, slots, pol, memory, budget)


def test_a_trace_carries_max_tokens_and_refuses_one_below_the_answer():
    text = "arrival,output_tokens,max_tokens\n0,5,8\n1,3,0\n"
    reqs = parse_trace(text, "t.csv")
    assert [r.max_tokens for r in reqs] == [8, 0]
    try:
        parse_trace("arrival,output_tokens,max_tokens\n0,5,4\n", "t.csv")
    except ValueError as exc:
        assert str(exc) == "t.csv:2:3: max_tokens 4 is below output_tokens 5"
    else:
        raise AssertionError("a cap below the answer was read")


def test_the_cli_runs_sglang_with_its_order_and_refuses_it_elsewhere(capsys, tmp_path):
    trace = tmp_path / "caps.csv"
    trace.write_text("arrival,output_tokens,max_tokens\n0,5,5\n0,3,30\n0,4,10\n")
    argv = ["simulate", "--trace", str(trace), "--slots", "1", "--token-budget", "8", "--policy", "sglang", "--json"]
    assert main([*argv, "--schedule-policy", "lof"]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert [r["start"] for r in doc["requests"]] == [7, 0, 3] and doc["requests"][1]["max_tokens"] == 30
    assert main(["simulate", "--policy", "vllm", "--token-budget", "8", "--schedule-policy", "lof"]) == 2
    assert "--schedule-policy applies to a policy with that setting (sglang) only" in capsys.readouterr().err
    memory = MemoryConfig(kv_blocks=8, block_size=4)
    assert schedule([Request("A", 0, 3, 1)], 1, "sglang", memory, token_budget=4).preemptions == 0
