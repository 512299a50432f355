"""TensorRT-LLM's two capacity schedulers as policies: GUARANTEED_NO_EVICT and MAX_UTILIZATION."""

from __future__ import annotations

from collections.abc import Sequence

from core.sched.policies import Policy
from core.sched.settings import Setting

# TensorRT-LLM's per-iteration token limit (BuildConfig.max_num_tokens, 8192 by default), declared once for both.
MAX_NUM_TOKENS = Setting(
    "max_num_tokens", 8192, "TensorRT-LLM: the most tokens in one iteration, a decoding row's one each, then whole "
    "contexts; a context that does not fit ends the iteration's scheduling", low=1, high=10_000_000,
)  # fmt: skip


class _Trtllm(Policy):
    """What both capacity schedulers share: the micro-batch scheduler's token limit (microBatchScheduler.cpp)."""

    engine = "TensorRT-LLM"
    settings = (MAX_NUM_TOKENS,)
    cap_counts_decoders = True
    cap_name = "max_num_tokens"

    def prompt_tokens_cap(self, prompts: Sequence[int]) -> int:
        """Return max_num_tokens: decoding rows (one token each) then whole contexts, first come first served."""
        return self.max_num_tokens


class TrtllmNoEvict(_Trtllm):
    """TensorRT-LLM's capacity scheduler, GUARANTEED_NO_EVICT (its default; TensorRT-LLM docs, "Scheduler").

    A request is admitted, first come first served, only if its prompt plus its maximum output fits the free KV for
    its whole life, so a running request never runs out of blocks and nothing is ever evicted. The maximum output is the
    request's own max_tokens, as the engine reads it, where the traffic gives one; else (what we simplify) the
    traffic's cap on answer length (`reserve_tokens`, default its longest answer).
    """

    name = "trtllm-no-evict"
    label = "TensorRT-LLM no-evict"
    summary = "admit only what fits its whole life (prompt + max tokens): never preempts"
    versus = "trtllm-max-util"

    def reserves_whole_life(self, allocation: str) -> bool:
        """Return True: every request reserves its prompt plus the output cap at admission, paged or not."""
        return True


class TrtllmMaxUtil(_Trtllm):
    """TensorRT-LLM's capacity scheduler, MAX_UTILIZATION (TensorRT-LLM docs, "Scheduler").

    Requests are admitted, first come first served, by what they need now (prompt plus the next token); when a
    running request needs a block and none is free, the most recently admitted is paused, its blocks freed, and it
    later recomputes. What we simplify: a paused request's KV is recomputed, never offloaded to host memory.
    """

    name = "trtllm-max-util"
    label = "TensorRT-LLM max-util"
    summary = "admit by current need, pause the newest when a block runs out"
    versus = "trtllm-no-evict"
