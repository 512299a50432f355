"""Text Generation Inference's router as a policy: prefill passes that pause the running batch."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from core.sched.policies import Policy
from core.sched.settings import Setting


class TGI(Policy):
    """Text Generation Inference's router (TGI docs, "Text-generation-launcher arguments"): prefill pauses the batch.

    The router without chunked prefill (TGI 2, and TGI 3 on a backend that does not chunk): with chunked prefill TGI 3
    joins prompt chunks to the running batch and ignores waiting_served_ratio.

    Requests are admitted first come first served into a prefill pass that holds only their prompts, at most
    `max_batch_prefill_tokens` of them, while the running batch is paused (it emits nothing in that pass). With
    nothing running the waiting are admitted at once. While rows decode, a prefill pass forms only when the waiting
    requests it would admit number at least `waiting_served_ratio` times the running batch (rounded down, at least
    one), or when `max_waiting_tokens` decode passes have run since the last prefill (TGI's waiting_tokens counts
    from 1 after a prefill); a prefill that paused the batch is always followed by a decode pass. Each request
    reserves its prompt plus the output cap at admission (TGI's block allocator reserves max_new_tokens), so nobody
    is preempted. The cap is the request's own max_tokens where the traffic gives one; what we simplify: else the
    traffic's cap (`reserve_tokens`, default its longest answer); max_batch_total_tokens is the KV pool; no
    speculation, no prefix cache.
    """

    name = "tgi"
    engine = "TGI"
    label = "TGI"
    colour = "#CC6677"  # Paul Tol's rose
    summary = "TGI: prefill passes pause the running batch, gated by waiting_served_ratio and max_waiting_tokens"
    pauses_decoders = True
    gates_admission = True
    versus = "continuous"
    settings = (
        Setting("waiting_served_ratio", 0.3, "TGI: while rows decode, a prefill pauses them once the waiting it "
                "admits reach this times the batch", high=1000),
        Setting("max_waiting_tokens", 20, "TGI: decode passes after which the waiting are let in whatever the ratio",
                low=1, high=1_000_000),
        Setting("max_batch_prefill_tokens", 0, "TGI: the most prompt tokens in a prefill pass (0: the longest "
                "prompt + 50)", high=10_000_000),
    )  # fmt: skip
    caption = (
        "TGI: waiting requests join in a prefill pass that pauses the running batch; while it decodes, a prefill "
        "forms only when the waiting it would admit reach waiting_served_ratio times the running batch, or after "
        "max_waiting_tokens decode passes. Each request reserves its prompt plus the answer cap, so none is preempted."
    )
    caption_memory = caption

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
        """Return max_batch_prefill_tokens; 0 is TGI's default, the longest prompt (max_input_tokens) plus 50."""
        return self.max_batch_prefill_tokens or max(prompts, default=0) + 50
