"""The real replay follows the core's chunked prefill and contiguous pools pass for pass; greedy tokens unchanged."""

import random

import numpy as np
import pytest
import torch

from core import Request, TrafficConfig, generate
from core.kv.memory import MemoryConfig
from core.sched.engine import schedule
from core.states import PREFILL
from replay import Engine
from replay.engine import BLOCK_SIZE
from replay.plan import pass_plans

torch.set_num_threads(1)

# Long prompts beside short ones on 3 slots, arriving over a few steps: a small budget cuts A, C and E into chunks
# while B and D decode beside them, and D's one-token prompt finishes in a pass another prompt shares.
REQUESTS = [
    Request("A", 0, 6, 45),
    Request("B", 0, 4, 20),
    Request("C", 1, 5, 33),
    Request("D", 2, 3, 1),
    Request("E", 3, 6, 17),
    Request("F", 4, 2, 0),
]


@pytest.fixture(scope="module")
def engine():
    """The tiny model on the CPU in fp32."""
    return Engine("tiny", device="cpu", seed=0)


@pytest.fixture(scope="module")
def unchunked(engine):
    """The same requests under continuous batching, each prompt in one pass."""
    return engine.replay(REQUESTS, 3, "continuous")


def _passes_match(result, plan) -> None:
    """The replay ran the core's passes: as many, at the same steps, with its decoding rows and prefill tokens."""
    ran = np.flatnonzero(result.rows_per_step > 0)
    assert len(ran) == plan.passes
    assert (ran == plan.pass_start.astype(np.int64)).all()
    assert (result.decode_rows_per_step[ran] == plan.pass_rows).all()
    assert (result.prefill_per_step[ran] == plan.pass_prefill).all()


@pytest.mark.parametrize("budget", [3, 8, 21])
def test_chunked_replay_follows_the_core_and_keeps_the_greedy_tokens(engine, unchunked, budget):
    """Greedy in fp32: chunked prefill changes when tokens come, not which; every pass is the core's."""
    plan = schedule(REQUESTS, 3, "chunked", token_budget=budget)
    assert (plan.cells[:, 4] == PREFILL).any()  # the budget really splits prompts over passes
    chunked = engine.replay(REQUESTS, 3, "chunked", token_budget=budget)
    assert chunked.outputs == unchunked.outputs
    assert [len(o) for o in chunked.outputs] == [r.output_tokens for r in REQUESTS]
    _passes_match(chunked, plan)
    assert (chunked.decode_rows_per_step + chunked.prefill_per_step <= budget).all()
    # A's 45-token prompt yields its first token only in its last chunk's pass, and TTFT is measured to it.
    assert chunked.run.schedule.first_pass[0] > chunked.run.start[0]
    ttft = chunked.latencies_ms()["ttft"]
    clock = chunked.step_start_ms
    assert ttft[0] == pytest.approx(clock[int(plan.pass_start[plan.first_pass[0]]) + 1])


def test_chunked_replay_under_a_tight_pool_preempts_where_the_core_does(engine):
    """A paged pool of 5 blocks: the core throws out a request mid-prefill and one mid-decode; tokens unchanged."""
    requests = [
        Request("A", 0, 11, 45),
        Request("B", 4, 5, 18),
        Request("C", 2, 6, 47),
        Request("D", 0, 12, 29),
        Request("E", 2, 9, 44),
        Request("F", 3, 8, 50),
    ]
    memory = MemoryConfig(kv_blocks=5, block_size=BLOCK_SIZE)
    plan = schedule(requests, 3, "chunked", memory, token_budget=16)
    prefilling = {(i, hi) for i, _, _, hi, state in plan.cells.tolist() if state == PREFILL}
    thrown = [e for e in plan.events if e.kind == "preempt"]
    assert any((e.request, e.step) in prefilling for e in thrown)  # one victim had only part of its prompt cached
    assert any(e.tokens > 0 for e in thrown)  # and one had tokens to recompute
    limited = engine.replay(requests, 3, "chunked", memory=memory, token_budget=16)
    free = engine.replay(requests, 3, "continuous")
    assert limited.outputs == free.outputs
    assert limited.preemptions == plan.preemptions
    assert limited.recomputed_tokens == plan.recomputed_tokens > 0
    _passes_match(limited, plan)


def test_contiguous_replay_follows_the_core_admissions(engine):
    """Contiguous reservations on 10 blocks: F waits at a hole (5 free, 4 needed, no run of 4); tokens unchanged."""
    requests = [
        Request("A", 3, 6, 43),
        Request("B", 4, 12, 23),
        Request("C", 1, 8, 1),
        Request("D", 2, 9, 18),
        Request("E", 3, 11, 15),
        Request("F", 4, 2, 43),
    ]
    memory = MemoryConfig(kv_blocks=10, block_size=BLOCK_SIZE, allocation="contiguous")
    plan = schedule(requests, 3, "continuous", memory)
    assert any(e.kind == "blocked" and e.free >= e.tokens for e in plan.events)  # a hole held an admission back
    contiguous = engine.replay(requests, 3, "continuous", memory=memory)
    free = engine.replay(requests, 3, "continuous")
    assert contiguous.outputs == free.outputs
    assert contiguous.run.drain == int(plan.pass_end[-1]) > free.run.drain  # the hole cost a step
    _passes_match(contiguous, plan)
    chunked = engine.replay(requests, 3, "chunked", memory=memory, token_budget=8)
    assert chunked.outputs == free.outputs
    _passes_match(chunked, schedule(requests, 3, "chunked", memory, token_budget=8))


@pytest.mark.parametrize("budget", [0, 2, None, 2.5])
def test_a_bad_token_budget_is_refused_with_one_message(engine, budget):
    """The chunked policy needs a whole budget of at least the slots; the core's one message says so."""
    with pytest.raises(ValueError, match=r"^the chunked policy needs token_budget, an integer in 3\.\.10,000,000"):
        engine.replay(REQUESTS, 3, "chunked", token_budget=budget)


def test_a_budget_without_chunked_is_refused(engine):
    """A token budget under another policy would change nothing: refused, naming the policy."""
    for policy in ("continuous", "static"):
        with pytest.raises(ValueError, match=f"token_budget applies to a policy with a token budget, not {policy}"):
            engine.replay(REQUESTS, 3, policy, token_budget=8)


def test_pass_plans_read_every_schedule_back():
    """Torch-free: on random traffic, pools and budgets, the chunks read from cells rebuild the core's passes.

    Each chunk starts where the request's cache ends, a chunk emits only at the end of its prompt (plus what a
    readmission recomputes), each pass's cached context is the core's, and every request emits its output once.
    """
    checked = 0
    for seed in range(60):
        rnd = random.Random(seed)
        requests = generate(
            TrafficConfig(
                seed=seed,
                requests=rnd.randint(1, 10),
                arrival_window=rnd.randint(1, 8),
                mean_prompt_tokens=rnd.randint(1, 40),
                mean_tokens=rnd.randint(1, 10),
                max_tokens=24,
            )
        )
        slots = rnd.randint(1, 4)
        policy = rnd.choice(["continuous", "chunked"])
        budget = rnd.randint(slots, slots + 24) if policy == "chunked" else None
        need = max(-(-(max(1, r.prompt_tokens) + r.output_tokens) // 4) for r in requests)
        allocation = rnd.choice(["paged", "contiguous", None])
        memory = (
            MemoryConfig()
            if allocation is None
            else MemoryConfig(kv_blocks=3 * need + 2, block_size=4, allocation=allocation)
        )
        plan = schedule(requests, slots, policy, memory, token_budget=budget)
        prompt = [max(1, r.prompt_tokens) for r in requests]
        emitted, cached = [0] * len(requests), [0] * len(requests)
        for p in pass_plans(plan):
            for i in p.preempt:
                cached[i] = 0
            context = sum(prompt[i] + emitted[i] for i in p.decode) + sum(c.start for c in p.chunks)
            assert context == plan.pass_context[p.index]
            assert len(p.decode) == plan.pass_rows[p.index] and p.prefill_tokens == plan.pass_prefill[p.index]
            for c in p.chunks:
                assert c.start == cached[c.request] < c.end
                assert c.emits == (c.end == prompt[c.request] + emitted[c.request])
                cached[c.request] = c.end
                emitted[c.request] += c.emits
            for i in p.decode:
                emitted[i] += 1
        assert emitted == [r.output_tokens for r in requests]
        checked += 1
    assert checked == 60


CLI_SMALL = ["--requests", "6", "--mean-prompt-tokens", "30", "--mean-tokens", "4", "--slots", "3", "--no-progress"]


@pytest.mark.parametrize("policy", ["sjf", "priority"])
def test_the_replay_command_runs_an_ordered_policy_beside_static(capsys, policy):
    """`replay --policy sjf|priority --json`: the second column is that policy's, named, its tokens all emitted."""
    import json

    from batchviz.cli import main

    assert main(["replay", *CLI_SMALL, "--device", "cpu", "--policy", policy, "--json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert doc["beside"] == policy and "continuous" not in doc and "token_budget" not in doc
    assert doc[policy]["tokens"] == doc["static"]["tokens"]
    assert main(["replay", *CLI_SMALL, "--device", "cpu", "--policy", policy]) == 0
    assert f"measured speedup (tokens/s, {policy} / static)" in capsys.readouterr().out


def test_the_replay_command_runs_chunked_beside_static(capsys):
    """`replay --policy chunked --token-budget 8 --json`: the chunked column is the core's schedule, replayed."""
    import json

    from batchviz.cli import main

    assert main(["replay", *CLI_SMALL, "--device", "cpu", "--policy", "chunked", "--token-budget", "8", "--json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert doc["token_budget"] == 8 and "continuous" not in doc
    assert doc["chunked"]["tokens"] == doc["static"]["tokens"]
    for argv, message in (
        (["--policy", "chunked", "--token-budget", "2"], "--token-budget 2 is below --slots 3"),
        (["--policy", "chunked"], "--policy chunked needs --token-budget T"),
        (["--token-budget", "8"], "--token-budget applies to a policy with a token budget (chunked, vllm, sglang"),
        (["--policy", "chunked", "--token-budget", "8", "--online"], "--online replays static, continuous (on"),
    ):
        assert main(["replay", *CLI_SMALL, *argv]) == 2
        assert message in capsys.readouterr().err
