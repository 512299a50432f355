"""SGLang's scheduler as a policy: prefill first, in chunks, while the running batch waits."""

from __future__ import annotations

from core.sched.policies import Policy
from core.sched.settings import Setting
from core.workload.request import Request


class SGLang(Policy):
    """SGLang's scheduler (SGLang docs, "Server Arguments"): prefill first, in chunks, while the running batch waits.

    A pass holds prompt chunks or decoding rows, never both. Whenever a prompt is being chunked or a waiting request
    can be admitted (a free slot, blocks for its prompt and next token), the pass is a prefill pass of at most
    `chunked_prefill_size` prompt tokens (the token budget) and the running requests are paused; otherwise every
    running request decodes. `schedule_policy` fcfs admits by arrival; lof (longest output first) by each request's
    max_tokens, largest first, then arrival (a request without max_tokens has none to go by: lof is then fcfs). A block
    shortage retracts the most recently admitted request, which later recomputes. What we simplify: SGLang admits
    against an estimate of the running requests' future tokens (new_token_ratio) and retracts the request with the
    fewest tokens so far; mixed chunks (--enable-mixed-chunk) and the radix prefix cache are off.
    """

    name = "sglang"
    engine = "SGLang"
    label = "SGLang"
    colour = "#999933"  # Paul Tol's olive
    summary = "SGLang: prefill passes first, in chunks of chunked_prefill_size, the running batch paused; fcfs or lof"
    has_token_budget = True
    pauses_decoders = True
    versus = "vllm"
    settings = (
        Setting("schedule_policy", "fcfs", "SGLang's queue order: by arrival, or lof (largest max_tokens first)",
                choices=("fcfs", "lof")),
    )  # fmt: skip
    caption = (
        "SGLang: a pass either prefills or decodes. Whenever a prompt can start or is being chunked, the pass "
        "prefills at most chunked_prefill_size prompt tokens and the running requests wait; a block shortage retracts "
        "the newest request, which later recomputes."
    )
    caption_memory = caption

    @property
    def queue_words(self) -> str:
        """Return the waiting order in the loop's words."""
        return "largest max_tokens first" if self.schedule_policy == "lof" else "in arrival order"

    @property
    def order_field(self) -> str:
        """Return the request field lof orders by ("" under fcfs: arrival)."""
        return "max_tokens" if self.schedule_policy == "lof" else ""

    @property
    def order_words(self) -> str:
        """Return that field in words."""
        return "max_tokens" if self.schedule_policy == "lof" else ""

    def queue_key(self, request: Request) -> int | None:
        """Return minus the request's max_tokens under lof (the largest first), else None (arrival order)."""
        return -request.max_tokens if self.schedule_policy == "lof" else None
