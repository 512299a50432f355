"""TGI's preset without chunking (`prefill_chunking=0`, TGI 2): prefill passes pause the batch, gated by the ratio.

TGI 3's default, chunked prefill, is tests/test_conformance_tgi.py's.
"""

import json
from functools import partial

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from core import Request
from core.cli.commands import main
from core.clock.cost import Roofline
from core.engines.tgi import TGI
from core.kv.memory import MemoryConfig
from core.sched.engine import as_run, schedule
from core.sched.timed import simulate_timed
from core.states import PAUSED
from tests.oracles.memory_loop import simulate_memory_per_step

from .test_policies import _pool, traffic
from .test_sglang import capped_traffic

TGI2 = partial(TGI, prefill_chunking=0)  # TGI 2, or TGI 3 on a model that cannot chunk


def _batch_then(extra_arrivals, **knobs):
    """Ten long requests at step 0 on 13 slots, then short ones arriving at `extra_arrivals`: their starts."""
    reqs = [Request(f"L{i}", 0, 40, 2) for i in range(10)]
    reqs += [Request(f"S{i}", a, 5, 3) for i, a in enumerate(extra_arrivals)]
    s = schedule(reqs, 13, TGI2(**knobs))
    return s, s.start_pass[10:].tolist()


def test_the_waiting_join_when_they_reach_the_ratio_of_the_batch():
    """Ten decoding at ratio 0.3: floor(3.0) = 3 must be waiting; the third arrival (step 9) opens the prefill."""
    s, starts = _batch_then([2, 4, 9])
    assert starts == [9, 9, 9]
    assert s.pass_rows[9] == 0 and s.pass_prefill[9] == 9  # the prefill pass holds only the three prompts
    run = as_run(s)
    paused = run.cells[run.cells[:, 4] == PAUSED]
    assert sorted(paused[:, 0].tolist()) == list(range(10)) and set(paused[:, 2].tolist()) == {9}
    assert all(row[9] == "Z" for row in run.timeline_strings()[:10])
    # The long requests each emit their 40 tokens, one pass later than they would have.
    assert s.finish_pass[:10].tolist() == [41] * 10


def test_max_waiting_tokens_lets_the_waiting_in_whatever_the_ratio():
    """Two waiting never reach 3: they join when waiting_tokens (1 after the prefill, +1 a decode) reaches 20, or 5."""
    assert _batch_then([2, 4])[1] == [20, 20]
    assert _batch_then([2, 4], max_waiting_tokens=5)[1] == [5, 5]
    assert _batch_then([2, 4], waiting_served_ratio=0.1)[1] == [2, 4]  # floor(1.0) = 1: each joins on arrival


def test_a_prefill_that_paused_the_batch_is_followed_by_a_decode_pass():
    """Ratio 0: every arrival would open a prefill, but never two paused prefills in a row."""
    reqs = [Request("A", 0, 30, 2)] + [Request(f"S{i}", 1 + i, 4, 2) for i in range(6)]
    s = schedule(reqs, 8, TGI2(waiting_served_ratio=0.0))
    assert s.start_pass[1:].tolist() == [1, 3, 3, 5, 5, 7]
    paused = np.array([any(row[q] == "Z" for row in as_run(s).timeline_strings()) for q in range(s.passes)])
    assert paused.tolist()[:8] == [False, True, False, True, False, True, False, True]
    assert not (paused[:-1] & (s.pass_prefill[1:] > 0)).any()


def test_the_prefill_pass_holds_at_most_max_batch_prefill_tokens():
    """Four 30-token prompts under a 64-token prefill budget: two passes of two."""
    reqs = [Request(f"R{i}", 0, 3, 30) for i in range(4)]
    s = schedule(reqs, 4, TGI2(max_batch_prefill_tokens=64))
    assert s.start_pass.tolist() == [0, 0, 1, 1] and s.pass_prefill[:2].tolist() == [60, 60]
    default = schedule(reqs, 4, TGI2(max_batch_prefill_tokens=0))  # before 2.4.1: the longest prompt + 50 = 80
    assert default.start_pass.tolist() == [0, 0, 1, 1]


def test_a_prompt_longer_than_the_prefill_budget_is_refused_by_name(capsys):
    try:
        schedule([Request("A", 0, 3, 100)], 1, TGI2(max_batch_prefill_tokens=64))
    except ValueError as exc:
        assert "a prompt of 100 tokens is longer than tgi's 64 tokens a pass" in str(exc)
    else:
        raise AssertionError("a 100-token prompt ran under a 64-token prefill budget")
    argv = ["simulate", "--policy", "tgi", "--prefill-chunking", "0", "--max-batch-prefill-tokens", "8"]
    argv += ["--requests", "5"]
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert "max_batch_prefill_tokens" in err and err.count("\n") == 1 and "Traceback" not in err


@settings(max_examples=200, deadline=None)
@given(
    traffic,
    st.integers(1, 5),
    st.sampled_from([0.0, 0.3, 0.5, 1.2]),
    st.integers(1, 6),
    st.sampled_from([0, 24, 40]),
    st.sampled_from(["paged", "contiguous"]),
    st.one_of(st.none(), st.integers(0, 6)),
)
def test_tgi_with_any_settings_equals_the_oracle_and_never_preempts(
    reqs, slots, ratio, waiting_tokens, prefill, allocation, extra
):
    """Any ratio, max_waiting_tokens, prefill budget and pool: the oracle's cells and no preemption.

    A pass that holds prompt tokens decodes no row: the running batch is paused (or empty).
    """
    cap = max(prefill, max(r.prompt_tokens or 1 for r in reqs)) if prefill else 0
    pol = TGI2(waiting_served_ratio=ratio, max_waiting_tokens=waiting_tokens, max_batch_prefill_tokens=cap)
    memory = _pool(reqs, allocation, extra, 4)
    s = schedule(reqs, slots, pol, memory)
    strings, events, recomputed, peak = simulate_memory_per_step(reqs, slots, pol, memory)
    assert as_run(s).timeline_strings() == strings
    assert [(int(s.pass_start[e.step]), e.kind, e.request) for e in s.events] == events
    assert s.preemptions == 0 and recomputed == 0 and s.memory_metrics()["peak_blocks"] == peak
    assert (s.pass_rows[s.pass_prefill > 0] == 0).all()


def test_tgi_on_the_clock_prices_a_paused_pass_as_prompt_only():
    """On the roofline a paused prefill pass costs its prompts alone; the decoding rows' tokens come a pass later."""
    reqs = [Request(f"L{i}", 0, 20, 2) for i in range(10)] + [Request(f"S{i}", 1, 5, 300) for i in range(3)]
    cost = Roofline()
    t = simulate_timed(reqs, 13, TGI2(max_batch_prefill_tokens=1000), cost)
    q = int(np.flatnonzero((t.pass_prefill > 0) & (t.pass_rows == 0))[-1])
    assert t.pass_prefill[q] == 900 and t.start_pass[10:].tolist() == [q] * 3
    assert np.isclose(t.pass_end_ms[q] - t.pass_start_ms[q], cost.pass_ms(0, 900, 0))


def test_the_cli_takes_tgi_settings_and_refuses_them_elsewhere(capsys):
    argv = ["compare", "--requests", "60", "--slots", "8", "--policies", "continuous,tgi", "--prefill-chunking", "0"]
    argv += ["--json"]
    assert main(argv) == 0
    default = json.loads(capsys.readouterr().out)["tgi"]
    assert main([*argv, "--waiting-served-ratio", "0", "--max-waiting-tokens", "1"]) == 0
    eager = json.loads(capsys.readouterr().out)
    assert main([*argv, "--waiting-served-ratio", "0.3", "--max-waiting-tokens", "20"]) == 0
    assert json.loads(capsys.readouterr().out)["tgi"] == default  # TGI's documented defaults are the preset's
    assert eager["tgi"]["drain_steps"] != default["drain_steps"]
    assert eager["continuous"] == json.loads(json.dumps(eager["continuous"]))  # the other policy takes no knob
    assert main(["simulate", "--policy", "continuous", "--max-waiting-tokens", "4"]) == 2
    assert "--max-waiting-tokens applies to a policy with that setting (tgi) only" in capsys.readouterr().err
    with pytest.raises(SystemExit) as exit_:
        main(["simulate", "--policy", "tgi", "--prefill-chunking", "0", "--waiting-served-ratio", "-1"])
    assert exit_.value.code == 2
    assert "--waiting-served-ratio: expected a number in 0..1000, got '-1'" in capsys.readouterr().err


def test_the_replay_reads_a_paused_schedule_pass_by_pass():
    """The replay's plan of a TGI and an SGLang schedule: each pass's decoders and prompt tokens are the core's."""
    from replay.plan import pass_plans

    reqs = [Request(f"L{i}", 0, 12, 3) for i in range(4)] + [Request(f"S{i}", 2 + i, 4, 9) for i in range(4)]
    for s in (schedule(reqs, 6, TGI2(waiting_served_ratio=0.0)), schedule(reqs, 6, "sglang", token_budget=8)):
        plans = pass_plans(s)
        assert [len(p.decode) for p in plans] == s.pass_rows.tolist()
        assert [p.prefill_tokens for p in plans] == s.pass_prefill.tolist()
        assert any(p.chunks and not p.decode for p in plans[1:])  # a prompt pass with the batch paused


@settings(max_examples=150, deadline=None)
@given(
    capped_traffic,
    st.integers(1, 4),
    st.sampled_from([TGI2(), "trtllm-no-evict", "continuous"]),
    st.sampled_from(["paged", "contiguous"]),
    st.integers(0, 4),
)
def test_a_reservation_holds_each_requests_own_max_tokens(reqs, slots, policy, allocation, extra):
    """Where a request carries max_tokens, a whole-life reservation holds its prompt plus that cap.

    TGI, no-evict and contiguous allocation reserve it, not the traffic's longest answer: the engine equals the oracle.
    """
    memory = _pool(reqs, allocation, extra, 4)
    s = schedule(reqs, slots, policy, memory)
    strings, events, recomputed, peak = simulate_memory_per_step(reqs, slots, policy, memory)
    assert as_run(s).timeline_strings() == strings and s.memory_metrics()["peak_blocks"] == peak
    assert [(int(s.pass_start[e.step]), e.kind, e.request) for e in s.events] == events


def test_small_caps_let_no_evict_run_more_at_once():
    """A 40-token answer in the traffic: reserving 40 each, one short request fits 12 blocks of 4 at a time.

    With max_tokens 8 each, all four short ones fit at once.
    """
    long = Request("L", 10, 40, 4)
    short = [Request(f"S{i}", 0, 4, 4) for i in range(4)]
    capped = [Request(f"S{i}", 0, 4, 4, 0, 8) for i in range(4)]
    memory = MemoryConfig(kv_blocks=12, block_size=4)
    assert schedule(short + [long], 4, "trtllm-no-evict", memory).start_pass[:4].tolist() == [0, 4, 8, 12]
    assert schedule(capped + [long], 4, "trtllm-no-evict", memory).start_pass[:4].tolist() == [0, 0, 0, 0]
