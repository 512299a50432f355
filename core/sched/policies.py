"""The batching policies: each one object whose methods are its rules, in a registry; a name not in it is refused.

The loop (`sched.engine`) asks a policy, at every boundary between passes, what only the policy decides: the waiting
queue's order, whether a batch forms now, whom to preempt when a block runs out, what a request reserves, and whether
a pass holds a token budget. Everything else reads a policy's traits (`traits()`), never its name.
"""

from __future__ import annotations

import heapq
from collections import deque
from collections.abc import Sequence

import numpy as np

from core.sched import fast_loops
from core.sched.settings import Setting
from core.workload.request import Request


class KeyedQueue:
    """A waiting queue ordered by a key per request (smallest first); a preempted request rejoins by its key.

    The same interface as the `deque` a first-come-first-served queue is, so the loop asks both alike.
    """

    def __init__(self, keys: Sequence):
        self.keys = keys  # keys[k] for request k (requests numbered in first-come-first-served order)
        self.heap: list = []

    def append(self, k: int) -> None:
        """Add request k (an arrival)."""
        heapq.heappush(self.heap, (self.keys[k], k))

    appendleft = append  # a preempted request rejoins by its key, not at the front

    def popleft(self) -> int:
        """Remove and return the head."""
        return heapq.heappop(self.heap)[1]

    def __getitem__(self, i: int) -> int:
        if i != 0:
            raise IndexError("a keyed queue shows only its head")
        return self.heap[0][1]

    def __len__(self) -> int:
        return len(self.heap)


class Policy:
    """Continuous batching, first come first served: the rules every policy starts from.

    Between any two passes finished requests retire and waiting requests are admitted in the queue's order (arrival,
    then trace order) into the lowest free slot while the head fits the KV pool; a head that does not fit blocks the
    queue. A pass holds every running row. When a running request needs a block and none is free, the most recently
    admitted running request is preempted (vLLM's recompute) and returns to the front of the queue. A request holds
    its prompt plus its tokens so far (paged) or reserves prompt plus the cap on output (contiguous).
    """

    name = "continuous"
    label = "continuous"
    colour = "#009E73"  # Okabe-Ito bluish green; no slot state's colour
    summary = "admit and retire between passes"
    forms_batches = False  # a batch forms when every slot is free and runs until its longest member finishes
    has_timeout = False  # a batch also forms when the oldest waiting request has waited `batch_timeout`
    has_token_budget = False  # a pass holds at most `token_budget` tokens: decoding rows first, then prompt chunks
    prefill_chunk_cap = 0  # with a budget: at most this many of one prompt's tokens in a pass (0: the budget's)
    pauses_decoders = False  # a pass that holds a prompt holds no decoding row: the running batch waits (TGI)
    gates_admission = False  # while rows decode, `admits_now` decides whether the waiting join at this boundary
    settings: tuple[Setting, ...] = ()  # the engine settings it takes, each declared once (core/sched/settings.py)
    engine = ""  # the serving engine whose scheduler it follows ("" : the chapter's own policies)
    versus = "static"  # the policy a page shows beside it
    simulator_mode = False  # offered on the simulator's mode choice (the chapter's policies and its two orders)
    queue_words = "in arrival order"  # the waiting order, as the loop's comment says it
    order_field = ""  # the request field its order reads, as the renderer's view names it ("" : arrival)
    order_words = ""  # that field in words
    orders_by_class = False  # its order reads each request's priority class (a page shows each class's latency)
    victim_words = "the last admitted"  # whom a block shortage preempts (at most 24 characters: a loop line)
    caption = (
        "Continuous batching: between forward passes, finished requests leave and waiting ones take the "
        "free slots at once. No padding; a slot is idle only when nobody is waiting."
    )
    caption_memory = (
        "Continuous batching: between forward passes, finished requests leave and waiting ones take the free "
        "slots, in arrival order, while the next one's KV fits; a request that needs a block when none is free "
        "preempts the one admitted last, which later recomputes its KV."
    )
    # Its rules again as a loop over heaps, for an unlimited pool (3x the engine's speed); None: the engine only.
    fast_steps = None
    fast_timed = None

    def __init__(self, *args, **values):
        """Take each of its engine settings, in order or by name (else its default), checked as it is declared."""
        if len(args) > len(self.settings):
            raise ValueError(f"{self.name} takes {len(self.settings)} settings, got {len(args)}")
        values = {**{setting.name: value for setting, value in zip(self.settings, args)}, **values}
        unknown = [k for k in values if k not in self.knobs]
        if unknown:
            have = ", ".join(self.knobs) or "none"
            raise ValueError(f"{self.name} has no setting {unknown[0]!r} (its settings: {have})")
        for setting in self.settings:
            setattr(self, setting.name, setting.check(values.get(setting.name, setting.default)))

    @property
    def knobs(self) -> tuple[str, ...]:
        """Return its settings' names (the engine's own), in their declared order."""
        return tuple(setting.name for setting in self.settings)

    def __init_subclass__(cls, **kwargs):
        super().__init_subclass__(**kwargs)
        # A fast loop hard-codes its own class's rules: a subclass that changes a rule must not run it silently.
        for attr in ("fast_steps", "fast_timed"):
            if attr not in cls.__dict__:
                setattr(cls, attr, None)

    def queue_key(self, request: Request) -> int | None:
        """Return the request's place in the waiting order (smaller first; ties by arrival), or None for arrival."""
        return None

    def new_queue(self, requests: Sequence[Request]):
        """Return an empty waiting queue for `requests` (numbered in first-come-first-served order)."""
        if not self.ordered:
            return deque()  # arrival order; a preempted request goes back to the front (vLLM's FCFS)
        return KeyedQueue([(self.queue_key(r), k) for k, r in enumerate(requests)])

    def victim_rank(self, request: Request) -> int:
        """Return how readily a running request is preempted (larger first; ties: the most recently admitted)."""
        return 0

    def reserves_whole_life(self, allocation: str) -> bool:
        """Return whether a request reserves its prompt plus the output cap at admission, not block by block."""
        return allocation == "contiguous"

    def admits_now(self, fitting: int, decoding: int, decodes_since: int, after_pause: bool) -> bool:
        """Gated policies: return whether waiting requests join at this boundary while `decoding` rows decode.

        `fitting`: how many waiting requests this pass would admit (free slots, the pool, the pass's prompt tokens);
        `decodes_since`: decode passes since the last pass that held a prompt; `after_pause`: that pass paused the
        decoding rows and was the last one.
        """
        return True

    def recheck_in(self, decodes_since: int) -> int | None:
        """Gated policies: return after how many more decode passes `admits_now` may change by itself (None: never)."""
        return None

    def prompt_tokens_cap(self, prompts: Sequence[int]) -> int:
        """Return the most prompt tokens one pass admits (0: no cap); a single prompt over it is refused."""
        return 0

    def batch_forms_at(self, arrivals: Sequence[float], k: int, slots: int, timeout: float, clock: float) -> float:
        """Batch policies: return when a batch headed by waiting request k forms (arrivals sorted, FCFS)."""
        raise NotImplementedError(f"{self.name} admits between passes; it forms no batches")

    def with_knobs(self, **knobs) -> Policy:
        """Return this policy with some of its engine settings changed; a setting it does not have is refused."""
        unknown = [k for k in knobs if k not in self.knobs]
        if unknown:
            have = ", ".join(self.knobs) or "none"
            raise ValueError(f"{self.name} has no setting {unknown[0]} (its settings: {have})")
        return type(self)(**{**{k: getattr(self, k) for k in self.knobs}, **knobs})

    @property
    def ordered(self) -> bool:
        """Return whether the waiting queue has an order of its own (not arrival)."""
        return self.queue_key(Request("-", 0, 1)) is not None

    def traits(self) -> dict:
        """Return what the app, the replay and the renderer read instead of the name."""
        return {
            "name": self.name,
            "label": self.label,
            "colour": self.colour,
            "summary": self.summary,
            "forms_batches": self.forms_batches,
            "has_timeout": self.has_timeout,
            "has_token_budget": self.has_token_budget,
            "pauses_decoders": self.pauses_decoders,
            "has_fast_timed": self.fast_timed is not None,
            "ordered": self.ordered,
            "versus": self.versus,
            "engine": self.engine,
            "simulator_mode": self.simulator_mode,
            "order_field": self.order_field,
            "order_words": self.order_words,
            "orders_by_class": self.orders_by_class,
        }

    def __repr__(self) -> str:
        return f"<policy {self.name}>"


class Continuous(Policy):
    """Continuous batching, first come first served (the base rules, unchanged)."""

    simulator_mode = True

    def fast_steps(self, arrivals: list[int], lengths: list[int], slots: int, timeout: float):
        """Return (start, slot, release) per request in FCFS order on an unlimited pool (step clock)."""
        start, slot = fast_loops.continuous_steps(arrivals, lengths, slots)
        return start, slot, None

    def fast_timed(self, requests, order, slots: int, runner, timeout: float):
        """Return the timed schedule's columns on an unlimited pool, its passes run by `runner`."""
        return fast_loops.continuous_timed(requests, order, slots, runner)


# What one static row reserves, in the page's words wherever it is said (the engine's `_static`: width + reserve).
STATIC_ROW = "the batch's longest prompt plus the cap on answer length (here the traffic's longest answer)"


class Static(Policy):
    """Static batching: a batch forms only when every slot is free, then runs until its longest member finishes.

    With no batch in flight, a batch of up to `slots` waiting requests (first come first served, slots 0, 1, ...)
    forms when the slots can be filled, the oldest has waited `batch_timeout`, or nobody else will arrive. A member
    that finishes early pads its slot until the batch ends. Every row reserves a dense rectangle: the batch's longest
    prompt plus the output cap, whatever the allocation; a batch forms with as many rows as fit the pool.
    """

    name = "static"
    label = "static"
    colour = "#CC79A7"  # Okabe-Ito reddish purple
    summary = "form a batch, run it until its longest member finishes"
    forms_batches = True
    has_timeout = True
    versus = "continuous"
    simulator_mode = True
    caption = (
        "Static batching: a batch forms only when every slot is free, and runs until its longest request "
        "finishes. Finished requests keep their slot as padding; newcomers wait for the whole batch."
    )
    caption_memory = (
        "Static batching reserves KV for whole rows, whatever the allocation: a batch forms only when every slot is "
        f"free, with as many members as whole rows fit the pool (each row {STATIC_ROW}); it runs until its "
        "longest request finishes."
    )

    def fast_steps(self, arrivals: list[int], lengths: list[int], slots: int, timeout: float):
        """Return (start, slot, release) per request in FCFS order on an unlimited pool (step clock)."""
        return fast_loops.static_steps(arrivals, lengths, slots, timeout, self.batch_forms_at)

    def fast_timed(self, requests, order, slots: int, runner, timeout: float):
        """Return the timed schedule's columns on an unlimited pool, its batches run by `runner`."""
        return fast_loops.static_timed(requests, order, slots, runner, timeout, self.batch_forms_at)

    def reserves_whole_life(self, allocation: str) -> bool:
        """Return True: a static row is a dense rectangle, whatever the allocation."""
        return True

    def batch_forms_at(self, arrivals: Sequence[float], k: int, slots: int, timeout: float, clock: float) -> float:
        """Return when the batch headed by k forms: slots fillable, the oldest waited `timeout`, or the last arrival."""
        oldest = arrivals[k]
        full_at = arrivals[k + slots - 1] if k + slots - 1 < len(arrivals) else float("inf")
        return max(clock, oldest, min(full_at, oldest + timeout, arrivals[-1]))


class Chunked(Policy):
    """Chunked prefill: continuous batching whose passes hold at most `token_budget` tokens.

    Every decoding row first, then prompt chunks, oldest admission first; a prompt split over several passes yields
    its first token only in its last chunk's pass.
    """

    name = "chunked"
    label = "chunked prefill"
    colour = "#56B4E9"  # Okabe-Ito sky blue
    summary = "continuous, with prompts split into chunks under a token budget"
    has_token_budget = True
    versus = "continuous"
    caption = (
        "Chunked prefill: continuous batching whose passes hold at most a token budget: every decoding row first, "
        "then prompt chunks, oldest first; a long prompt is split over several passes."
    )
    caption_memory = caption


class ShortestFirst(Policy):
    """Shortest job first: continuous batching whose queue is ordered by output length, shortest first.

    Ties by arrival, then trace order. The simulator knows each request's true length, which no engine does: this is
    what ordering the queue by a perfect length prediction buys, without interrupting anyone running (not the best
    any scheduler could do: one that pauses a long request for a short one can do better, and the longest answers
    wait longer, sometimes running alone at the end). A preempted request rejoins by its length.
    """

    name = "sjf"
    label = "shortest first"
    colour = "#D55E00"  # Okabe-Ito vermillion
    summary = "continuous, the waiting queue ordered by output length, shortest first (a perfect prediction)"
    versus = "continuous"
    simulator_mode = True
    queue_words = "shortest answer first"
    order_field = "output"
    order_words = "answer length"
    caption = (
        "Shortest job first: continuous batching whose waiting queue is ordered by answer length, shortest first. "
        "The simulator knows every answer's length, which no engine does: this is what ordering the queue by a "
        "perfect length prediction buys, without interrupting anyone running. Short requests overtake long ones; the "
        "longest wait longer and may finish alone at the end: the mean latency can fall while the drain grows."
    )
    caption_memory = (
        "Shortest job first: between forward passes, finished requests leave and the shortest waiting answers take "
        "the free slots while the next one's KV fits; a request that needs a block when none is free preempts the "
        "one admitted last, which rejoins the queue by its length and later recomputes its KV."
    )

    def queue_key(self, request: Request) -> int:
        """Return the output length: shorter first."""
        return request.output_tokens


class Priority(Policy):
    """Priority scheduling (vLLM's `policy=priority`): the waiting queue by `priority`, lower first, then arrival.

    Under a limited pool the victim of a block shortage is the lowest-priority running request (the largest
    number), then the most recently admitted; a preempted request rejoins the queue by its priority.
    """

    name = "priority"
    label = "priority"
    colour = "#000000"
    summary = "continuous, the waiting queue by priority (lower first), the lowest class preempted first"
    versus = "continuous"
    simulator_mode = True
    queue_words = "lowest priority number first"
    order_field = "priority"
    order_words = "priority"
    orders_by_class = True
    victim_words = "the lowest class, newest"
    caption = (
        "Priority scheduling (vLLM's policy=priority): continuous batching whose waiting queue is ordered by each "
        "request's priority, lower numbers first, then arrival. A high class overtakes a low one in the queue."
    )
    caption_memory = (
        "Priority scheduling: between forward passes, finished requests leave and waiting ones take the free slots "
        "by priority (lower numbers first) while the next one's KV fits; a request that needs a block when none is "
        "free preempts the lowest class running, the newest of it, which rejoins the queue by its priority."
    )

    def queue_key(self, request: Request) -> int:
        """Return the request's priority: lower first."""
        return request.priority

    def victim_rank(self, request: Request) -> int:
        """Return the priority: the lowest class (largest number) is preempted first."""
        return request.priority


class TrtllmNoEvict(Policy):
    """TensorRT-LLM's capacity scheduler, GUARANTEED_NO_EVICT (its default; TensorRT-LLM docs, "Scheduler").

    A request is admitted, first come first served, only if its prompt plus its maximum output fits the free KV for
    its whole life, so a running request never runs out of blocks and nothing is ever evicted. The maximum output is the
    request's own max_tokens, as the engine reads it, where the traffic gives one; else (what we simplify) the
    traffic's cap on answer length (`reserve_tokens`, default its longest answer).
    """

    name = "trtllm-no-evict"
    engine = "TensorRT-LLM"
    label = "TensorRT-LLM no-evict"
    colour = "#882255"
    summary = "admit only what fits its whole life (prompt + max tokens): never preempts"
    versus = "trtllm-max-util"
    caption = (
        "TensorRT-LLM's GUARANTEED_NO_EVICT: a request is admitted only when its prompt plus its maximum answer fits "
        "the free KV cache, so no running request is ever evicted; on a tight pool fewer run at once."
    )
    caption_memory = caption

    def reserves_whole_life(self, allocation: str) -> bool:
        """Return True: every request reserves its prompt plus the output cap at admission, paged or not."""
        return True


class TrtllmMaxUtil(Policy):
    """TensorRT-LLM's capacity scheduler, MAX_UTILIZATION (TensorRT-LLM docs, "Scheduler").

    Requests are admitted, first come first served, by what they need now (prompt plus the next token); when a
    running request needs a block and none is free, the most recently admitted is paused, its blocks freed, and it
    later recomputes. What we simplify: a paused request's KV is recomputed, never offloaded to host memory.
    """

    name = "trtllm-max-util"
    engine = "TensorRT-LLM"
    label = "TensorRT-LLM max-util"
    colour = "#117733"
    summary = "admit by current need, pause the newest when a block runs out"
    versus = "trtllm-no-evict"
    caption = (
        "TensorRT-LLM's MAX_UTILIZATION: requests are admitted by what they need now, so more run at once; when a "
        "block runs out the newest is paused and later recomputes its KV."
    )
    caption_memory = caption


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
    colour = "#332288"
    summary = "vLLM v1: chunked prefill under max_num_batched_tokens; fcfs or priority"
    has_token_budget = True
    versus = "continuous"
    settings = (
        Setting("scheduling_policy", "fcfs", "vLLM's queue order: by arrival, or by each request's priority",
                choices=("fcfs", "priority")),
        Setting("long_prefill_token_threshold", 0, "vLLM: the most of one prompt's tokens in a pass (0: off)",
                high=10_000_000),
    )  # fmt: skip
    caption = (
        "vLLM v1: continuous batching whose passes hold at most max_num_batched_tokens tokens, decoding rows first "
        "and then prompt chunks; a block shortage preempts the newest request, which later recomputes."
    )
    caption_memory = caption

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

    def victim_rank(self, request: Request) -> int:
        """Return the priority under scheduling_policy=priority (the lowest class preempted first), else 0."""
        return request.priority if self.scheduling_policy == "priority" else 0


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


REGISTRY: dict[str, Policy] = {}
CHAPTER_PAIR = ("static", "continuous")  # the two policies the chapter's lessons compare, in the order it shows them


def register(policy: Policy) -> Policy:
    """Add `policy` to the registry under its name (replacing one of the same name); return it."""
    if not isinstance(policy, Policy):
        raise TypeError(f"register needs a Policy, got {policy!r}")
    if policy.forms_batches and policy.ordered:
        raise ValueError(f"{policy.name}: a batch policy forms its batches first come, first served")
    if policy.ordered and policy.queue_words == Policy.queue_words:  # the page's loop would say "arrival order"
        raise ValueError(f"{policy.name}: an ordered policy says its order in queue_words, not {Policy.queue_words!r}")
    if policy.gates_admission and (policy.ordered or not policy.reserves_whole_life("paged")):
        raise ValueError(f"{policy.name}: a gated policy admits first come, first served, each its whole life")
    REGISTRY[policy.name] = policy
    return policy


def unregister(name: str) -> None:
    """Remove a policy from the registry (tests' toy policies)."""
    REGISTRY.pop(name, None)


for _policy in (
    Static(),
    Continuous(),
    Chunked(),
    ShortestFirst(),
    Priority(),
    VLLM(),
    TrtllmNoEvict(),
    TrtllmMaxUtil(),
    TGI(),
    SGLang(),
):
    register(_policy)


def get_policy(name: str | Policy) -> Policy:
    """Return the registered policy called `name`, or refuse the name with the ones allowed."""
    if isinstance(name, Policy):
        return name
    try:
        return REGISTRY[name]
    except (KeyError, TypeError):
        raise ValueError(f"policy must be one of {', '.join(REGISTRY)}, got {name!r}") from None


def carry_policy(record) -> None:
    """Give a frozen run record its policy both as a name (`policy`) and as the object (`rules`), whichever it got.

    The object travels with the run, settings and all, so nothing downstream looks a name up again: a preset with
    settings keeps its base preset's name, and its lookup would give the base preset's rules.
    """
    given, rules = record.policy, record.rules
    if isinstance(given, Policy):
        rules = given
    elif rules is None or rules.name != given:  # a name alone, or a copy renamed (`dataclasses.replace`)
        rules = get_policy(given)
    object.__setattr__(record, "policy", rules.name)
    object.__setattr__(record, "rules", rules)


def policy_names() -> tuple[str, ...]:
    """Return the registered policies' names, in registration order."""
    return tuple(REGISTRY)
