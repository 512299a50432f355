"""SGLang's scheduler as a policy: prefill first, admission against an estimate, retraction in bulk to the back."""

from __future__ import annotations

import heapq
from collections import deque
from collections.abc import Iterable, Sequence

from core.clock.hardware import ACCELERATORS
from core.sched.policies import KeyedQueue, Policy
from core.sched.settings import Setting
from core.workload.request import Request

# SGLang's scheduler, read in sgl-project/sglang: python/sglang/srt/managers/schedule_policy.py at ad0119fd,
# scheduler.py and schedule_batch.py at 000eaffa, tp_worker.py at 0045f98e, python/sglang/global_config.py at 025ea29a
# (python/sglang/srt/environ.py of later commits keeps the same defaults). Its defaults:
CLIP_MAX_NEW_TOKENS = 4096  # schedule_policy.py: a request's max_new_tokens, as the estimate counts it, at most this
INIT_NEW_TOKEN_RATIO = 0.7  # global_config.py default_init_new_token_ratio (times schedule_conservativeness, 1.0)
MIN_NEW_TOKEN_RATIO_FACTOR = 0.14  # default_min_new_token_ratio_factor: the ratio's floor is 0.7 x 0.14 = 0.098
NEW_TOKEN_RATIO_DECAY_STEPS = 600  # default_new_token_ratio_decay_steps: decode passes from 0.7 to the floor
RETRACT_DECODE_STEPS = 20  # retract_decode_steps: the tokens a retraction's new ratio allows each kept request


class InsertionQueue(KeyedQueue):
    """A queue by key whose ties go by insertion.

    SGLang sorts its waiting list stably (lof), so an arrival or a retracted request goes behind those of the same
    key already waiting.
    """

    def __init__(self, keys: Sequence):
        super().__init__(keys)
        self.inserted = 0

    def append(self, k: int) -> None:
        """Add request k behind the waiting of its key."""
        heapq.heappush(self, (self.keys[k], self.inserted, k))
        self.inserted += 1

    appendleft = append

    def popleft(self) -> int:
        """Remove and return the head."""
        return heapq.heappop(self)[2]


class NewTokenEstimate:
    """One run's estimate of the running requests' future tokens, and its new_token_ratio (SGLang's PrefillAdder).

    Built by `SGLang.estimate`; the loop and the oracle each ask their own. Requests are numbered as the caller's;
    `max_new[k]` is request k's max_new_tokens as SGLang sets it. The ratio starts at 0.7, loses (0.7 - 0.098) / 600
    each decode pass (`decoded`) down to 0.098, is set by a retraction (`retracted`) and back to 0.7 when nothing
    runs (`reset`).
    """

    def __init__(self, prompts: Sequence[int], max_new: list[int], keys: list[int] | None):
        self.prompts, self.max_new, self.keys = prompts, max_new, keys
        self.init = min(INIT_NEW_TOKEN_RATIO * 1.0, 1.0)  # Scheduler.__init__: x schedule_conservativeness (1.0)
        self.floor = min(self.init * MIN_NEW_TOKEN_RATIO_FACTOR, 1.0)
        self.decay = (self.init - self.floor) / NEW_TOKEN_RATIO_DECAY_STEPS
        self.base, self.steps = self.init, 0  # the ratio is `base` less `steps` decays, at least the floor

    @property
    def ratio(self) -> float:
        """Return the new_token_ratio now (a retraction's may be below the floor, until the next decode pass)."""
        return max(self.base - self.steps * self.decay, self.floor) if self.steps else self.base

    def decoded(self, passes: int) -> None:
        """Scheduler.update_running_batch: each decode pass without a retraction decays the ratio a step."""
        self.steps += passes

    def reset(self) -> None:
        """Scheduler.self_check_during_idle: nothing runs, the ratio is back at its start."""
        self.base, self.steps = self.init, 0

    def retracted(self, kept: Sequence[tuple[int, int]]) -> None:
        """ScheduleBatch.retract_decode: set the ratio from the requests a retraction kept.

        It is their tokens out plus 20 each, over their max_new_tokens, at most 1; `kept`: (request, tokens out).
        """
        total = sum(self.max_new[k] for k, _ in kept)
        decoded = sum(out for _, out in kept) + RETRACT_DECODE_STEPS * len(kept)
        self.base, self.steps = (min(1.0, decoded / total) if total else 1.0), 0

    def left(self, k: int, out: int) -> int:
        """Return request k's max_new_tokens still to come after `out` tokens, clipped (at least 0)."""
        return min(max(self.max_new[k] - out, 0), CLIP_MAX_NEW_TOKENS)

    def room(self, free_tokens: int, decoding: Sequence[tuple[int, int]], completing: Sequence[int]) -> float:
        """PrefillAdder.rem_total_tokens: the tokens an admission may take beside the running requests' estimate.

        The free tokens less each decoding (request, tokens out)'s tokens to come times the ratio, less the
        max_new_tokens of each prompt that completes in this pass (_update_prefill_budget). Our pool has already
        taken the blocks of the prompts admitted in this pass, which SGLang charges here too.
        """
        max_new, clip, left = self.max_new, CLIP_MAX_NEW_TOKENS, 0
        for k, out in decoding:  # sum(self.left(k, out)), inlined: it runs at every admission on a tight pool
            r = max_new[k] - out
            if r > 0:
                left += r if r < clip else clip
        charged = sum(min(max_new[k], clip) for k in completing)
        return free_tokens - left * self.ratio - charged

    def admits(self, k: int, generated: int, room: float) -> bool:
        """PrefillAdder.add_one_req: return whether request k's prompt and tokens to come are below `room`.

        `generated`: the tokens it had made before a retraction, recomputed with its prompt (`if total_tokens >=
        self.rem_total_tokens: return AddReqResult.NO_TOKEN`).
        """
        return self.prompts[k] + generated + self.left(k, generated) < room

    def queue(self):
        """Return an empty waiting queue: arrival order (fcfs), or by max_new_tokens, largest first (lof).

        An arrival or a retracted request joins behind the others (Scheduler._add_request_to_queue: append).
        """
        return deque() if self.keys is None else InsertionQueue(self.keys)


class SGLang(Policy):
    """SGLang's scheduler, rule by rule from its code (the files and commits above): prefill first, the running paused.

    A pass holds prompt chunks or decoding rows, never both (Scheduler.get_next_batch_to_run tries
    get_new_batch_prefill first; mixed chunks are off by default). Whenever a prompt is being chunked or a waiting
    request is admitted, the pass prefills at most `chunked_prefill_size` prompt tokens (the token budget) and the
    running requests wait; otherwise every running request decodes.

    Admission (PrefillAdder.add_one_req): the head enters if its prompt plus its max_new_tokens to come (at most 4096)
    is below the free tokens less every decoding request's max_new_tokens to come (at most 4096 each) times
    new_token_ratio, less the max_new_tokens of each prompt completing in the same pass. A refusal (or an estimate
    spent by an admission) sets batch_is_full: nobody is admitted until a request leaves (or a pass leaves a prompt
    chunked). The ratio starts at 0.7, loses (0.7 - 0.098) / 600 each decode pass down to 0.098 (a retraction may set
    it lower, until the next decode pass), and is back at 0.7 when nothing runs.

    Retraction (ScheduleBatch.retract_decode), only in a decode pass: where the rows' next blocks are not free, the
    requests with the fewest tokens out (ties: the longest prompt, then the last admitted) are retracted at once, at
    least one and never the last, until the others' blocks fit; they go to the back of the queue and later recompute.
    The ratio becomes the kept requests' tokens so far plus 20 each, over their max_new_tokens (at most 1).

    `schedule_policy` fcfs admits by arrival; lof (longest output first) by max_new_tokens, largest first, ties by who
    joined the queue first (a retracted request rejoins). max_new_tokens is the request's max_tokens, else max_req_len
    - prompt - 1 (Scheduler.init_req_max_new_tokens), so a request without one goes first (shorter prompts first);
    max_req_len is min(context length, pool tokens) - 1 (TpModelWorker), and the context length stands for the
    traffic's longest prompt plus its largest cap plus 2 (so every request may generate its cap).

    What we simplify: the estimate binds on a limited paged pool only (on an unlimited one it never binds; under
    contiguous allocation every request reserves its prompt and cap, as under every policy); a running request holds
    its newest token's block a pass before SGLang writes it, and a prompt all its blocks at admission (SGLang takes
    each chunk's as it runs); a finished request leaves at the next boundary (SGLang's loop notices it at its next
    decode pass, and its overlap scheduler, on by default, processes each pass's results during the next); chunks are
    not rounded to pages; max_prefill_tokens, the radix prefix cache (so lpm and the evictable tokens), priority
    scheduling and speculative decoding are left out.
    """

    name = "sglang"
    engine = "SGLang"
    label = "SGLang"
    summary = "SGLang: prefill passes first, in chunks of chunked_prefill_size, the running batch paused; fcfs or lof"
    has_token_budget = True
    pauses_decoders = True
    prefill_first = True  # Scheduler.get_next_batch_to_run: get_new_batch_prefill, else update_running_batch
    retracts_in_bulk = True  # ScheduleBatch.retract_decode
    victim_words = "those with fewest tokens"
    versus = "vllm"
    budget_setting = "chunked_prefill_size"
    settings = (
        Setting("schedule_policy", "fcfs", "SGLang's queue order: by arrival, or lof (largest max_new_tokens first: "
                "max_tokens, else what the context leaves, so a request without max_tokens goes first)",
                choices=("fcfs", "lof")),
        Setting("chunked_prefill_size", 0, "SGLang: the most prompt tokens in a prefill pass (0: SGLang's default "
                "for the accelerator's memory, 8192 from 35 to 160 GB: A100 80GB, H100, H200)", high=10_000_000),
    )  # fmt: skip

    def default_budget(self, accelerator: str) -> int:
        """Return SGLang's default chunked_prefill_size by GPU memory (python/sglang/srt/server_args.py).

        2048 under 35 GB, 8192 under 160 GB (A100 80GB, H100, H200), 16384 above.
        """
        gb = ACCELERATORS[accelerator].memory_gb
        return 2048 if gb < 35 else 8192 if gb < 160 else 16384

    @property
    def queue_words(self) -> str:
        """Return the waiting order in the loop's words."""
        return "largest max_tokens first, none first" if self.schedule_policy == "lof" else "in arrival order"

    @property
    def order_field(self) -> str:
        """Return the request field lof orders by ("" under fcfs: arrival)."""
        return "max_tokens" if self.schedule_policy == "lof" else ""

    @property
    def order_words(self) -> str:
        """Return that field in words."""
        return "max_tokens" if self.schedule_policy == "lof" else ""

    def queue_key(self, request: Request) -> int | None:
        """Return minus the request's max_tokens under lof (the largest first), else None (arrival order).

        It says only whether lof orders the queue: the loop orders it by max_new_tokens (`estimate`), which needs the
        traffic (a request without max_tokens goes first).
        """
        return -request.max_tokens if self.schedule_policy == "lof" else None

    def estimate(self, prompts: Sequence[int], max_tokens: Iterable[int], caps: Sequence[int], pool_tokens):
        """Return the run's NewTokenEstimate: each request's max_new_tokens and, under lof, its queue key.

        Scheduler.init_req_max_new_tokens: `min(max_new_tokens or 1 << 30, max_req_len - len(origin_input_ids) - 1)`.
        """
        longest = max(prompts, default=1) + max(caps, default=1) + 1  # the context length, less 1
        max_req_len = longest if pool_tokens is None else min(longest, pool_tokens - 1)  # TpModelWorker.__init__
        max_new = [max(min(m or 1 << 30, max_req_len - p - 1), 0) for p, m in zip(prompts, max_tokens)]
        keys = [-m for m in max_new] if self.schedule_policy == "lof" else None  # _sort_by_longest_output
        return NewTokenEstimate(prompts, max_new, keys)

    def retraction_victims(self, running: Sequence[tuple[int, int, int]], fits) -> list[int]:
        """ScheduleBatch.retract_decode: return the victims, the fewest tokens out first.

        Sort by (tokens out, -prompt), largest first, stably; pop from the end (the fewest tokens out, the longest
        prompt, the last admitted) at least once and while the others do not fit, but never the last one.
        """
        keep = sorted(running, key=lambda r: (r[1], -r[2]), reverse=True)  # reverse keeps ties in their order
        victims: list[int] = []
        while not victims or not fits(victims):
            if len(keep) == 1:  # "Corner case: only one request left"
                break
            victims.append(keep.pop()[0])
        return victims
