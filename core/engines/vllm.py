"""vLLM v1's scheduler as a policy: chunked prefill under a token budget, fcfs or priority."""

from __future__ import annotations

from core.clock.hardware import ACCELERATORS
from core.sched.policies import Policy
from core.sched.settings import Setting
from core.workload.request import Request


class VLLM(Policy):
    """vLLM v1's scheduler (vLLM docs, "Scheduler" and the engine arguments): continuous batching with chunked prefill.

    Every pass holds at most `max_num_batched_tokens` tokens (the token budget): decoding rows first, then prompt
    chunks, oldest first; `long_prefill_token_threshold` (0: off, vLLM's default without partial prefills) caps one
    prompt's tokens in a pass, so a long prompt cannot take the whole budget. `scheduling_policy` fcfs orders the
    queue by arrival and a block shortage preempts (recomputes) the newest; priority orders it by each request's
    priority, lower first, and preempts the lowest class first. `max_num_seqs` is the slots. What we simplify: no
    prefix caching, no speculative decoding, and a preempted request always recomputes.
    """

    name = "vllm"
    engine = "vLLM"
    label = "vLLM"
    summary = "vLLM v1: chunked prefill under max_num_batched_tokens; fcfs or priority"
    has_token_budget = True
    allocates_per_chunk = True  # scheduler.py: allocate_slots(request, num_new_tokens), chunk by chunk
    versus = "continuous"
    budget_setting = "max_num_batched_tokens"
    settings = (
        Setting("scheduling_policy", "fcfs", "vLLM's queue order: by arrival, or by each request's priority",
                choices=("fcfs", "priority")),
        Setting("long_prefill_token_threshold", 0, "vLLM: the most of one prompt's tokens in a pass (0: off)",
                high=10_000_000),
        Setting("max_num_batched_tokens", 0, "vLLM: the most tokens in a pass, decoding rows first, then prompt "
                "chunks (0: vLLM's default for the accelerator, 8192 on H100 and H200, 2048 on A100)",
                high=10_000_000),
    )  # fmt: skip

    def default_budget(self, accelerator: str) -> int:
        """Return vLLM's serving default (vllm/engine/arg_utils.py `get_batch_defaults`, OPENAI_API_SERVER).

        8192 on a device of at least 70 GiB that is not an A100 (H100, H200), else 2048.
        """
        acc = ACCELERATORS[accelerator]
        return 8192 if acc.memory_gb * 1e9 >= 70 * 2**30 and "a100" not in acc.key else 2048

    @property
    def orders_by_class(self) -> bool:
        """Return whether the queue is ordered by priority class (scheduling_policy=priority)."""
        return self.scheduling_policy == "priority"

    @property
    def prefill_chunk_cap(self) -> int:
        """Return the long-prefill threshold: one prompt's tokens in a pass (0: the budget's)."""
        return self.long_prefill_token_threshold

    @property
    def queue_words(self) -> str:
        """Return the waiting order in the loop's words."""
        return "lowest priority number first" if self.scheduling_policy == "priority" else "in arrival order"

    def queue_key(self, request: Request) -> int | None:
        """Return the priority under scheduling_policy=priority, else None (arrival order)."""
        return request.priority if self.scheduling_policy == "priority" else None

    @property
    def victim_by_arrival(self) -> bool:
        """Return whether the victim is the latest arrival of the lowest class (scheduler.py `schedule`, priority)."""
        return self.scheduling_policy == "priority"

    def victim_rank(self, request: Request) -> int:
        """Return the priority under scheduling_policy=priority (the lowest class preempted first), else 0."""
        return request.priority if self.scheduling_policy == "priority" else 0
