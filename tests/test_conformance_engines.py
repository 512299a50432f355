"""Conformance tables of vLLM, TGI and TensorRT-LLM: small traces, their schedules derived by hand from engine code.

Each case cites the engine's file and function, at the commit read; the expected passes in its docstring are worked
out from that code on the unit clock (a pass is a step), under the simplifications docs/schedulers.md states (a
request holds blocks for its prompt and every token it has generated, the one a pass generates included). SGLang's
table is tests/test_conformance_sglang.py.
"""

import pytest

from core import Request as R
from core.kv.memory import MemoryConfig
from core.limits import LimitError
from core.measure.lineup import entry_budget, entry_slots
from core.sched.engine import schedule
from core.sched.policies import get_policy

VLLM = "vllm-project/vllm@00024d31, vllm/v1/core/sched/scheduler.py"
VLLM_ARGS = "vllm-project/vllm@00024d31, vllm/engine/arg_utils.py"
TGI = "huggingface/text-generation-inference@db931fcf"
TRT = "NVIDIA/TensorRT-LLM@b8b7b782, cpp/tensorrt_llm/batch_manager"
SGLANG_ARGS = "sgl-project/sglang, python/sglang/srt/server_args.py"


def events(s) -> list[tuple[int, str, int]]:
    """Return the schedule's events as (pass, kind, request in trace order)."""
    return [(int(s.pass_start[e.step]), e.kind, e.request) for e in s.events]


# vLLM v1 ------------------------------------------------------------------------------------------------------------


def test_vllm_running_first_then_prompt_chunks_under_the_budget():
    """Scheduler.schedule: "First, schedule the RUNNING requests", one token each, then WAITING ones under the budget.

    A and B (2-token prompts) prefill in pass 0 and decode; C (10 tokens) arrives at 2. Budget 8: pass 2 holds A, B
    (2 tokens) and 6 of C's prompt; pass 3 the other 4, whose end gives C its first token.
    """
    vllm = get_policy("vllm").with_knobs(max_num_batched_tokens=8)
    s = schedule([R("A", 0, 6, 2), R("B", 0, 6, 2), R("C", 2, 2, 10)], 4, vllm)
    assert s.start_pass.tolist() == [0, 0, 2] and s.first_pass.tolist() == [0, 0, 3]
    assert s.pass_prefill[:4].tolist() == [4, 0, 6, 4] and s.pass_rows[:4].tolist() == [0, 2, 2, 2]


def test_vllm_long_prefill_token_threshold_caps_one_prompt_a_pass():
    """Scheduler.schedule: `if 0 < long_prefill_token_threshold < num_new_tokens: num_new_tokens = threshold`.

    C's 10 tokens at 3 a pass: 3, 3, 3, 1 in passes 2-5; its first token at the end of pass 5.
    """
    vllm = get_policy("vllm").with_knobs(max_num_batched_tokens=8, long_prefill_token_threshold=3)
    s = schedule([R("A", 0, 6, 2), R("B", 0, 6, 2), R("C", 2, 2, 10)], 4, vllm)
    assert s.first_pass[2] == 5 and s.pass_prefill[2:6].tolist() == [3, 3, 3, 1]


def test_vllm_fcfs_preempts_the_newest_and_requeues_it_at_the_front():
    """Scheduler.schedule: `preempted_req = self.running.pop()`; _preempt_request: `self.waiting.prepend_request`.

    Blocks of 4, a pool of 3. A (3-token prompt) takes 1 block, B (4) 2. At pass 1 A needs its second block: none is
    free, so B, the last admitted, is preempted (A runs on). C arrives at 1 needing one block, and one is free from
    pass 2, but B is at the front and needs two: the queue waits (a waiting request that cannot allocate stops the
    step's scheduling) until A finishes at pass 6; B then recomputes its one generated token.
    """
    reqs = [R("A", 0, 6, 3), R("B", 0, 6, 4), R("C", 1, 1, 1)]
    s = schedule(reqs, 3, "vllm", MemoryConfig(kv_blocks=3, block_size=4))
    assert events(s) == [(1, "preempt", 1), (2, "blocked", 1)]
    assert s.start_pass.tolist() == [0, 0, 6] and s.recomputed_tokens == 1


def test_vllm_priority_preempts_the_lowest_class_latest_arrival():
    """Scheduler.schedule, policy PRIORITY: `max(self.running, key=lambda r: (r.priority, r.arrival_time))`.

    A (class 1) runs from 0, B (class 0) from 1; the pool is then full. At pass 2 A needs a block: fcfs preempts B
    (the last admitted); priority preempts A, the lowest class, though B came in later.
    """
    reqs, pool = [R("A", 0, 8, 2, 1), R("B", 1, 8, 4, 0)], MemoryConfig(kv_blocks=3, block_size=4)
    assert events(schedule(reqs, 2, "vllm", pool))[0] == (2, "preempt", 1)
    priority = get_policy("vllm").with_knobs(scheduling_policy="priority")
    s = schedule(reqs, 2, priority, pool)
    assert events(s)[0] == (2, "preempt", 0) and s.finish_pass.tolist() == [15, 9]


def test_vllm_takes_a_prompts_blocks_chunk_by_chunk():
    """Scheduler.schedule: `kv_cache_manager.allocate_slots(request, num_new_tokens)` for each scheduled chunk.

    Blocks of 4, a pool of 4; a budget of 16 and long_prefill_token_threshold 8. Pass 0: A's first 8 prompt tokens
    take 2 blocks, and B (2 tokens) is admitted beside them with 1 block. Pass 1: A's last 4 tokens and its first
    token need 4 blocks, 1 is free: B, the last admitted, is preempted, and after A finishes at 3 it recomputes the
    token it had. Had A taken its whole prompt's blocks at admission, B would have waited until pass 3.
    """
    vllm = get_policy("vllm").with_knobs(max_num_batched_tokens=16, long_prefill_token_threshold=8)
    s = schedule([R("A", 0, 2, 12), R("B", 0, 6, 2)], 2, vllm, MemoryConfig(kv_blocks=4, block_size=4))
    assert s.start_pass.tolist() == [0, 0] and s.first_pass.tolist() == [1, 0]
    assert events(s) == [(1, "preempt", 1), (2, "blocked", 1)] and s.recomputed_tokens == 1
    assert s.finish_pass.tolist() == [3, 8]


@pytest.mark.parametrize("accelerator,budget", [("h100-sxm", 8192), ("h200", 8192), ("a100-80gb", 2048)])
def test_vllm_budget_default_is_the_serving_default_per_accelerator(accelerator, budget):
    """EngineArgs.get_batch_defaults (VLLM_ARGS), serving: 8192 from 70 GiB unless an A100, else 2048."""
    assert entry_budget(get_policy("vllm"), [R("A", 0, 1, 1)], 8, None, accelerator) == budget
    assert entry_budget(get_policy("vllm"), [R("A", 0, 1, 1)], 8, 512, accelerator) == 512  # a budget given wins


# SGLang's default budget (its rules are tests/test_conformance_sglang.py's) ---------------------------------------


@pytest.mark.parametrize("accelerator", ["h100-sxm", "h200", "a100-80gb"])
def test_sglang_chunked_prefill_size_default_by_gpu_memory(accelerator):
    """ServerArgs (SGLANG_ARGS): chunked_prefill_size 8192 from 35 GB to under 160 GB (A100 80GB, H100, H200)."""
    assert entry_budget(get_policy("sglang"), [R("A", 0, 1, 1)], 8, None, accelerator) == 8192


# TGI 3 --------------------------------------------------------------------------------------------------------------


def test_tgi_chunks_new_prompts_into_the_running_batchs_pass():
    """TGI 3 joins a new prompt to the running batch's pass in chunks, the decoders unpaused.

    backend.rs batching_task, support_chunking: `prefill_token_budget = max_batch_prefill_tokens - current_tokens`;
    queue.rs next_batch cuts the last entry to `chunk_len`; the new batch is prefilled with the cached one.
    A decodes from 0; B (10 tokens) arrives at 2, budget 6: pass 2 holds A's token and 5 of B's; pass 3 the other 5
    (flash_causal_lm.py generate_token: the next chunk is the budget less the other rows). A is never paused.
    """
    tgi = get_policy("tgi").with_knobs(max_batch_prefill_tokens=6)
    reqs = [R("A", 0, 10, 2), R("B", 2, 3, 10)]
    s = schedule(reqs, entry_slots(tgi, 1, 2, 6), tgi, token_budget=6)
    assert s.start_pass.tolist() == [0, 2] and s.first_pass.tolist() == [0, 3]
    assert s.pass_prefill[2:4].tolist() == [5, 5] and (s.pass_rows[1:5] >= 1).all()


def test_tgi_has_no_request_cap():
    """TGI has no request cap by default.

    backend.rs batching_task: with chunking `(None, None, prefill_token_budget)`, max_size None; launcher main.rs:
    `max_batch_size: Option<usize>`, unset by default.
    Seven decoding, five arriving at 3, the tab's 8 slots: all five join at 3 (capped at 8, the gate kept them out).
    """
    tgi = get_policy("tgi")
    reqs = [R(f"r{i}", 0, 60, 20) for i in range(7)] + [R(f"n{i}", 3, 10, 20) for i in range(5)]
    budget = entry_budget(tgi, reqs, 8, None, "h100-sxm")
    s = schedule(reqs, entry_slots(tgi, 8, len(reqs), budget), tgi, token_budget=budget)
    assert s.start_pass[7:].tolist() == [3] * 5


def test_tgi_default_prefill_budget_is_4096():
    """launcher/src/main.rs main: max_batch_prefill_tokens defaults to `default_optimal` 4096 (compute-optimal unknown).

    Not the traffic's longest prompt + 50, the rule before 2.4.1 (max_batch_prefill_tokens=0 asks for it).
    """
    reqs = [R("A", 0, 3, 100)]
    assert entry_budget(get_policy("tgi"), reqs, 8, 2048, "h100-sxm") == 4096  # its own, not the caller's
    old = get_policy("tgi").with_knobs(max_batch_prefill_tokens=0)
    assert entry_budget(old, reqs, 8, None, "h100-sxm") == 150


def test_tgi_without_chunking_pauses_the_batch_for_a_prefill_pass():
    """backend.rs batching_task without support_chunking: the new batch is prefilled alone, then concatenated.

    The same trace with prefill_chunking=0: pass 2 holds B's whole prompt and no decoding row (A paused).
    """
    tgi2 = get_policy("tgi").with_knobs(prefill_chunking=0, max_batch_prefill_tokens=10)
    s = schedule([R("A", 0, 10, 2), R("B", 2, 3, 10)], 2, tgi2)
    assert s.pass_prefill[2] == 10 and s.pass_rows[2] == 0 and s.first_pass[1] == 2


def test_tgi_refuses_the_settings_it_ignores_when_it_chunks():
    """backend.rs batching_task: "We can ignore min_size and max_size" with chunking; a label must not show them."""
    for knob in ({"waiting_served_ratio": 1.2}, {"max_waiting_tokens": 5}, {"max_batch_size": 4}):
        with pytest.raises(ValueError, match="add prefill_chunking=0"):
            get_policy("tgi").with_knobs(**knob)


def test_tgi_reserves_the_prompt_and_max_new_tokens_and_never_preempts():
    """queue.rs next_batch: `block_allocator.allocate(input_length + max_new_tokens + speculate - 1)` at admission.

    Three requests of 4 + 8 each (max_tokens 8) on 6 blocks of 4: 12 tokens, 3 blocks each, so two run at once and
    the third starts when one finishes; nobody is preempted.
    """
    reqs = [R(f"r{i}", 0, 8, 4, 0, 8) for i in range(3)]
    s = schedule(reqs, 3, "tgi", MemoryConfig(kv_blocks=6, block_size=4))
    assert s.start_pass.tolist() == [0, 0, 8] and s.preemptions == 0


# TensorRT-LLM -------------------------------------------------------------------------------------------------------


def test_trtllm_max_num_tokens_stops_the_iterations_scheduling():
    """A context that does not fit max_num_tokens ends the iteration's scheduling.

    microBatchScheduler.cpp MicroBatchScheduler::operator(): generation requests take a token each, then contexts
    first come first served; `if (batchNumTokens + reqNumTokens > maxNumTokensRuntime) break`.
    Three decoding; an 8,190-token context at 2 does not fit 8,192 with three rows: it waits until d0 finishes at 10,
    and a 10-token context at 3 waits behind it (the break ends the step's scheduling), joining at 11.
    """
    reqs = [R(f"d{i}", 0, 10 + 10 * i, 4) for i in range(3)] + [R("big", 2, 5, 8190), R("small", 3, 5, 10)]
    for name in ("trtllm-no-evict", "trtllm-max-util"):
        assert schedule(reqs, 8, name).start_pass.tolist() == [0, 0, 0, 10, 11]


def test_trtllm_max_num_tokens_default_and_a_context_over_it_refused():
    """BuildConfig.max_num_tokens = 8192; without chunked context a longer prompt can never be scheduled: refused."""
    assert get_policy("trtllm-no-evict").max_num_tokens == 8192
    with pytest.raises(LimitError, match="max_num_tokens"):
        schedule([R("A", 0, 3, 9000)], 4, "trtllm-max-util")


def test_trtllm_no_evict_reserves_the_whole_life():
    """capacityScheduler.cpp GuaranteedNoEvictScheduler: a request is scheduled only if its blocks to completion fit.

    The same three requests as TGI's case: two at once, the third when one finishes, no preemption.
    """
    reqs = [R(f"r{i}", 0, 8, 4, 0, 8) for i in range(3)]
    s = schedule(reqs, 3, "trtllm-no-evict", MemoryConfig(kv_blocks=6, block_size=4))
    assert s.start_pass.tolist() == [0, 0, 8] and s.preemptions == 0


def test_trtllm_max_util_admits_by_current_need_and_pauses_the_newest():
    """MAX_UTILIZATION admits by current need and pauses the newest when a block runs out.

    capacityScheduler.cpp MaxUtilizationScheduler: schedule by the blocks needed now; when a started request needs
    one more, pause the last started (`trySchedulingRequestMaxUtilization`, then the paused requests).
    Blocks of 4, a pool of 3: A (3-token prompt) and B (4) start at 0; at 1 A needs a block and B, the newest, pauses.
    """
    s = schedule([R("A", 0, 6, 3), R("B", 0, 6, 4)], 2, "trtllm-max-util", MemoryConfig(kv_blocks=3, block_size=4))
    assert events(s)[0] == (1, "preempt", 1) and s.start_pass.tolist() == [0, 0]


def test_the_five_presets_compare_with_no_other_flag(capsys):
    """Every engine at its defaults: `compare --policies vllm,tgi,sglang,trtllm-no-evict,trtllm-max-util` runs alone.

    It refused to run without --token-budget (its message named --policy), and ran on unit steps.
    """
    from core.cli.commands import main

    assert main(["compare", "--policies", "vllm,tgi,sglang,trtllm-no-evict,trtllm-max-util"]) == 0
    out = capsys.readouterr().out
    assert out.startswith("time: the roofline of Llama-2 7B on H100 SXM") and "tokens/s" in out
