"""Text Generation Inference's router as a policy: TGI 3's chunked prefill by default, or prefill passes that pause."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from core.sched.policies import Policy
from core.sched.settings import Setting

# TGI's default prefill budget since 2.4.1 when the model's compute-optimal size is unknown (launcher/src/main.rs:
# main, `default_optimal`); before 2.4.1 it was the longest prompt (max_input_tokens) plus 50, which 0 asks for.
DEFAULT_PREFILL_TOKENS = 4096


SUMMARY = "TGI 3: new prompts join the running batch's pass in chunks, under max_batch_prefill_tokens"
SUMMARY_PAUSED = "TGI 2: prefill passes pause the running batch, gated by waiting_served_ratio and max_waiting_tokens"


class TGI(Policy):
    """Text Generation Inference's router (backends/v3/src/backend.rs `batching_task`, queue.rs `next_batch`).

    TGI 3 chunks prefill by default (`PREFILL_CHUNKING=1`, server/text_generation_server/models/globals.py): at every
    boundary the waiting join the running batch first come first served, in the same pass, under a budget of
    `max_batch_prefill_tokens` less the running batch's own tokens this pass (a decoding row's one, a prompt's next
    chunk); the last one admitted is cut to fit exactly (its chunk) and the rest of its prompt follows in the next
    passes. waiting_served_ratio, max_waiting_tokens and max_batch_size are then ignored (the router says so), so no
    request cap: only the KV pool (max_batch_total_tokens) bounds the batch.

    `prefill_chunking=0` is TGI 2, or TGI 3 on a model that cannot chunk: a prefill pass holds only the new prompts,
    at most `max_batch_prefill_tokens` of them, and pauses the running batch. With nothing running the waiting are
    admitted at once; while rows decode a prefill forms only when the waiting it would admit number at least
    `waiting_served_ratio` times the batch (rounded down, in 32-bit floats), or after `max_waiting_tokens` decode
    passes (waiting_tokens counts from 1 after a prefill); a prefill that paused the batch is followed by a decode
    pass. `max_batch_size` caps the batch there (0: unset, TGI's default).

    Both reserve each request's prompt plus its max_new_tokens at admission (queue.rs: `block_allocator.allocate`),
    so nobody is preempted. What we simplify: max_new_tokens is the request's own max_tokens where the traffic gives
    one, else the traffic's cap (`reserve_tokens`, default its longest answer); the prefill budget is not rounded up
    to a whole block; the compute-optimal default (the accelerator's flops over the model's, when over 100) is not
    derived; no speculation, no prefix cache.
    """

    name = "tgi"
    engine = "TGI"
    label = "TGI"
    versus = "continuous"
    budget_setting = "max_batch_prefill_tokens"
    shares_budget = False  # its budget is max_batch_prefill_tokens, set as TGI's own
    settings = (
        Setting("prefill_chunking", 1, "TGI: 1 joins new prompts to the running batch's pass in chunks (TGI 3's "
                "default); 0 runs them in prefill passes that pause the batch (TGI 2, or a model that cannot chunk)",
                high=1),
        Setting("max_batch_prefill_tokens", DEFAULT_PREFILL_TOKENS, "TGI: the most prompt tokens a pass holds (with "
                "chunking, less the running batch's tokens; 0: the longest prompt + 50, TGI before 2.4.1)",
                high=10_000_000),
        Setting("waiting_served_ratio", 0.3, "TGI without chunking: while rows decode, a prefill pauses them once "
                "the waiting it admits reach this times the batch", high=1000),
        Setting("max_waiting_tokens", 20, "TGI without chunking: decode passes after which the waiting are let in "
                "whatever the ratio", low=1, high=1_000_000),
        Setting("max_batch_size", 0, "TGI without chunking: the most requests in the batch (0: unset, no cap)",
                high=4096),
    )  # fmt: skip
    def __init__(self, *args, **values):
        """Take TGI's settings; refuse those the router ignores when it chunks: no label shows one that did not run."""
        super().__init__(*args, **values)
        if self.prefill_chunking:
            ignored = [k for k in ("waiting_served_ratio", "max_waiting_tokens", "max_batch_size")
                       if k in values and values[k] != self._default(k)]  # fmt: skip
            if ignored:
                raise ValueError(
                    f"tgi: {ignored[0]} applies without chunking; TGI ignores it when it chunks prefill "
                    "(backends/v3/src/backend.rs, batching_task): add prefill_chunking=0"
                )

    def _default(self, key: str):
        return next(s.default for s in self.settings if s.name == key)

    @property
    def has_token_budget(self) -> bool:
        """Return whether a pass holds decoding rows and prompt chunks under a budget (chunking)."""
        return bool(self.prefill_chunking)

    @property
    def pauses_decoders(self) -> bool:
        """Return whether a prefill pass pauses the running batch (without chunking)."""
        return not self.prefill_chunking

    @property
    def gates_admission(self) -> bool:
        """Return whether waiting_served_ratio and max_waiting_tokens gate admission (without chunking)."""
        return not self.prefill_chunking

    @property
    def summary(self) -> str:
        """Return the summary of the mode it runs in."""
        return SUMMARY if self.prefill_chunking else SUMMARY_PAUSED

    def pass_budget(self, asked: int | None, accelerator: str, prompts: Sequence[int]) -> int | None:
        """Return max_batch_prefill_tokens as a chunking pass's budget; TGI's own setting, not the caller's."""
        return self.own_budget(prompts) if self.prefill_chunking else None

    def own_budget(self, prompts: Sequence[int]) -> int:
        """Return max_batch_prefill_tokens as a pass's budget (0: the longest prompt + 50)."""
        return self.max_batch_prefill_tokens or max(prompts, default=0) + 50

    @property
    def has_request_cap(self) -> bool:
        """Return whether max_batch_size caps the batch (set, without chunking); TGI has no cap by default."""
        return not self.prefill_chunking and self.max_batch_size > 0

    def request_cap(self, slots: int, requests: int) -> int:
        """Return max_batch_size where it is set without chunking, else every request (TGI has no cap by default)."""
        return self.max_batch_size if not self.prefill_chunking and self.max_batch_size else requests

    def reserves_whole_life(self, allocation: str) -> bool:
        """Return True: TGI's allocator reserves the prompt plus max_new_tokens at admission."""
        return True

    def admits_now(self, fitting: int, decoding: int, decodes_since: int, after_pause: bool) -> bool:
        """Return TGI's rule: the waiting it would admit reach the ratio of the batch, or the wait ran out."""
        if after_pause:  # TGI decodes once after every prefill that paused the batch
            return False
        if decodes_since + 1 >= self.max_waiting_tokens:  # waiting_tokens: 1 after a prefill, +1 per decode
            return fitting >= 1
        # min_size = floor(batch_size * waiting_served_ratio), in TGI's 32-bit floats
        min_size = int(np.floor(np.float32(decoding) * np.float32(self.waiting_served_ratio)))
        return fitting >= max(1, min_size)

    def recheck_in(self, decodes_since: int) -> int | None:
        """Return the decode passes until max_waiting_tokens forces the waiting in (None: it already does)."""
        left = self.max_waiting_tokens - 1 - decodes_since
        return left if left > 0 else None

    def prompt_tokens_cap(self, prompts: Sequence[int]) -> int:
        """Return max_batch_prefill_tokens as the cap on a prefill pass's prompts (without chunking; 0: none)."""
        return 0 if self.prefill_chunking else self.own_budget(prompts)

    cap_name = "max_batch_prefill_tokens"
